// Deep dive 06f's CPU run of ch06.cuda_kloop: the learner's text (the body of kernels/capstone_cuda.cu
// between its markers) compiled as host C++ against stand-ins of the course's wrappers, each of
// which prints what it was asked to do, one line per call (asynctc.warp_specialization.cuda_kloop_cpu
// reads the lines, orders the roles with a ring model and replays the loads and wgmmas on the CPU).
// Nothing here waits: ring_wait prints its barrier and parity and returns true; each role's text runs
// on its own, as one thread (the elected one, or another of its warpgroup).
//   wait BAR PARITY | expect BAR BYTES | arrive BAR | tma DST MAP BAR C0 C1 | fence |
//   wgmma DESC_A DESC_B SCALE_D | commit | waitgroup N | setmaxnreg inc|dec R | store TILE
// Addresses: stage s's A box at s · kStageBytes, B box 16384 further; full_bar(s) = 0x31000 + 8 s,
// empty_bar(s) = 0x31100 + 8 s. A run prints more than kMaxEvents lines: "limit", exit code 3.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

typedef uint32_t u32;
typedef uint64_t u64;
struct TmaDesc { int id; };
static const TmaDesc ta{0}, tb{1};
constexpr int BM = 128, BN = 128, BK = 64;
constexpr u32 kStageBytes = 32768;
static int STAGES, TILES, T, wg;
static bool elected;
static int first_, step_, tiles_n_;
static u64 desc_a0, desc_b0;
static float acc[64];
static long events_ = 0;
constexpr long kMaxEvents = 200000;

#define ASYNCTC_EV(...)                                                  \
  do {                                                                   \
    if (++events_ > kMaxEvents) { std::printf("limit\n"); std::exit(3); } \
    std::printf(__VA_ARGS__);                                            \
  } while (0)

inline u32 full_bar(int s) { return 0x31000u + 8u * (u32)s; }
inline u32 empty_bar(int s) { return 0x31100u + 8u * (u32)s; }
inline u32 smem_a(int s) { return (u32)s * kStageBytes; }
inline u32 smem_b(int s) { return (u32)s * kStageBytes + 16384u; }
inline int tile_m0(int tile) { return (first_ + tile * step_) / tiles_n_ * BM; }
inline int tile_n0(int tile) { return (first_ + tile * step_) % tiles_n_ * BN; }

inline bool ring_wait(u32 bar, u32 parity) { ASYNCTC_EV("wait %u %u\n", bar, parity); return true; }
inline u64 mbarrier_arrive(u32 bar) { ASYNCTC_EV("arrive %u\n", bar); return 0; }
inline u64 mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  ASYNCTC_EV("expect %u %u\n", bar, bytes);
  return 0;
}
inline void tma_load_2d(u32 dst, const TmaDesc& map, u32 bar, int c0, int c1) {
  ASYNCTC_EV("tma %u %d %u %d %d\n", dst, map.id, bar, c0, c1);
}
inline u64 wgmma_desc_advance(u64 desc, u32 bytes) { return desc + (u64)(bytes >> 4); }
inline void wgmma_fence() { ASYNCTC_EV("fence\n"); }
template <int R>
inline void wgmma_fence_operand(float (&)[R]) {}
template <int kN, int kDtype, int kTransA, int kTransB, int kDtypeB = kDtype>
inline void wgmma_mma_async_ss(float (&)[kN / 2], u64 desc_a, u64 desc_b, int scale_d) {
  static_assert(kN == 128 && kDtype == 0 && kTransA == 0 && kTransB == 0 && kDtypeB == 0,
                "the capstone's wgmma is wgmma_mma_async_ss<128, 0, 0, 0>: m64n128k16, f16, both K-major");
  ASYNCTC_EV("wgmma %llu %llu %d\n", (unsigned long long)desc_a, (unsigned long long)desc_b, scale_d);
}
inline void wgmma_commit_group() { ASYNCTC_EV("commit\n"); }
template <int kPending>
inline void wgmma_wait_group() {
  static_assert(kPending >= 0, "wgmma.wait_group takes a non-negative immediate");
  ASYNCTC_EV("waitgroup %d\n", kPending);
}
template <int kRegs>
inline void setmaxnreg_inc() { ASYNCTC_EV("setmaxnreg inc %d\n", kRegs); }
template <int kRegs>
inline void setmaxnreg_dec() { ASYNCTC_EV("setmaxnreg dec %d\n", kRegs); }
inline void store_tile(float (&)[64], int tile) { ASYNCTC_EV("store %d\n", tile); }

void learner_loops();

// argv: first step tiles_n n_tiles T STAGES desc_a_template desc_b_template; runs the text as the
// elected thread and another of warpgroups 0, 1, 2, each run opened by "run WG ELECTED".
int main(int argc, char** argv) {
  if (argc != 9) return 2;
  first_ = std::atoi(argv[1]); step_ = std::atoi(argv[2]); tiles_n_ = std::atoi(argv[3]);
  const int n_tiles = std::atoi(argv[4]);
  T = std::atoi(argv[5]); STAGES = std::atoi(argv[6]);
  const u64 ta0 = std::strtoull(argv[7], nullptr, 0), tb0 = std::strtoull(argv[8], nullptr, 0);
  TILES = first_ < n_tiles ? (n_tiles - first_ + step_ - 1) / step_ : 0;
  for (int w = 0; w < 3; ++w)
    for (int e = 1; e >= 0; --e) {
      wg = w; elected = e;
      const int cw = w > 0 ? w - 1 : 0;
      desc_a0 = ta0 + ((u64)(cw * 64 * 128) >> 4);
      desc_b0 = tb0 + (16384u >> 4);
      for (float& x : acc) x = 0.f;
      std::printf("run %d %d\n", w, e);
      learner_loops();
    }
  return 0;
}
