"""Device detection, run modes, NVRTC → cubin compilation and kernel launches.

Everything the chapters need to turn a ``.cu`` file under ``asynctc/kernels/`` into a running kernel:

* :func:`device_info` decides **once per process** whether a usable GPU is present. Where no driver
  library can be loaded, no driver call is ever made; otherwise the first driver call happens in a
  short-lived child process, because after a failed driver call a later one in the same process can
  hang (measured on the course's CPU machines). Only a probe that succeeded lets this process call
  the driver.
* :func:`mode` is ``"live"`` (a GPU is present) or ``"replay"`` (recorded data from ``data/``);
  the environment variable ``ASYNCTC_MODE`` overrides it.
* :func:`compile_kernel` compiles a kernel file with :class:`cuda.core.Program` to **cubin** for an
  explicit architecture (``sm_90a``, ``sm_100a``; never PTX for the driver to JIT), with include
  directories found by :mod:`cuda.pathfinder`, compile-time parameters as ``-D`` defines, and cubins
  cached on disk by :class:`cuda.core.utils.FileStreamProgramCache`. ptxas's resource report is kept;
  its diagnostics that mean lost performance (C7508 "setmaxnreg ignored", wgmma serialization,
  injected wgmma waits, spills — most printed at "info" level) become :class:`PerformanceWarning`,
  its other warnings :class:`UserWarning`. :func:`compile_ptx` makes PTX too, only for a notebook
  to print (a literal ``wgmma.mma_async`` line); nothing runs from it.
* :func:`launch` launches a compiled kernel, raising the dynamic shared-memory limit first when a
  launch asks for more than 48 KiB (``cuKernelSetAttribute``, CUDA driver API), after checking the
  launch configuration against the device's limits.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"

#: The architectures the course compiles for, and the compute capability each one runs on.
#: ``sm_90a`` code runs only on compute capability 9.0 and ``sm_100a`` only on 10.0: the ``a``
#: ("architecture-specific") targets are not forward compatible (CUDA C++ Programming Guide,
#: "Feature Availability").
ARCH_CC = {"sm_90a": (9, 0), "sm_90": (9, 0), "sm_100a": (10, 0), "sm_100": (10, 0)}

MODES = ("live", "replay")


class AsyncTCError(Exception):
    """Base class of the errors asynctc raises on purpose."""


class CompileError(AsyncTCError):
    """NVRTC rejected a kernel source; the message carries the kernel file, options and NVRTC log."""


class NoGPUError(AsyncTCError):
    """A live run was asked for where no GPU of the needed architecture is present."""


class PerformanceWarning(UserWarning):
    """ptxas reported something that costs performance: a ``setmaxnreg`` it ignored (C7508),
    wgmma instructions it serialized (C7510/C7511/...: "Potential Performance Loss"), a
    ``wgmma.wait_group`` it injected (C7517), or registers spilled to local memory. Raised as a
    warning by :func:`compile_kernel`; turn it into an error with
    ``warnings.simplefilter("error", PerformanceWarning)``."""


class LaunchConfigError(AsyncTCError, ValueError):
    """A launch configuration breaks a device limit; raised before anything reaches the GPU."""


# --------------------------------------------------------------------------------------------------
# Device detection
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What the probe found about GPU 0.

    Attributes: ``name`` (e.g. "NVIDIA H200"), ``cc`` (compute capability tuple), ``sm_count``,
    ``max_sm_clock_khz`` (the maximum SM clock the driver reports, kHz), ``mem_clock_khz``,
    ``l2_bytes``, ``smem_optin_bytes`` (largest dynamic shared memory one block may opt in to),
    ``driver_version`` (e.g. 13000 for CUDA 13.0).
    """

    name: str
    cc: tuple[int, int]
    sm_count: int
    max_sm_clock_khz: int
    mem_clock_khz: int
    l2_bytes: int
    smem_optin_bytes: int
    driver_version: int

    @property
    def arch(self) -> str:
        """The architecture-specific target of this GPU, e.g. ``sm_90a``."""
        return f"sm_{self.cc[0]}{self.cc[1]}a"

    @property
    def slug(self) -> str:
        """A short folder name for ``data/``: "NVIDIA H200" → "h200"."""
        s = self.name.lower().replace("nvidia", "").strip()
        s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
        return s or "gpu"


_PROBE = r"""
import json
from cuda.core import Device
from cuda.bindings import driver
d = Device(0)
d.set_current()
p = d.properties
err, ver = driver.cuDriverGetVersion()
print(json.dumps(dict(name=d.name, cc=list(d.compute_capability), sm_count=p.multiprocessor_count,
    max_sm_clock_khz=p.clock_rate, mem_clock_khz=p.memory_clock_rate, l2_bytes=p.l2_cache_size,
    smem_optin_bytes=p.max_shared_memory_per_block_optin, driver_version=int(ver))))
"""


def _driver_library_loadable() -> bool:
    """True when libcuda can be dlopen'ed (loading a library is not a driver call)."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


@functools.lru_cache(maxsize=1)
def device_info() -> DeviceInfo | None:
    """Detect GPU 0 once per process; ``None`` when there is no usable GPU.

    No driver call is made in this process unless a child process has already made one that
    succeeded. ``ASYNCTC_MODE=replay`` skips detection entirely.
    """
    if os.environ.get("ASYNCTC_MODE", "").strip().lower() == "replay":
        return None
    if not _driver_library_loadable():
        return None
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                             timeout=120, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    if out.returncode != 0:
        return None
    try:
        d = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    d["cc"] = tuple(d["cc"])
    return DeviceInfo(**d)


def mode() -> str:
    """``"live"`` when a GPU is present, else ``"replay"``; ``ASYNCTC_MODE`` overrides.

    Raises :class:`ValueError` for an unknown ``ASYNCTC_MODE`` and :class:`NoGPUError` when
    ``ASYNCTC_MODE=live`` is set on a machine without a GPU.
    """
    forced = os.environ.get("ASYNCTC_MODE", "").strip().lower()
    if forced and forced not in MODES:
        raise ValueError(f"ASYNCTC_MODE={forced!r}: must be one of {MODES}")
    if forced == "replay":
        return "replay"
    info = device_info()
    if forced == "live" and info is None:
        raise NoGPUError("ASYNCTC_MODE=live, but no GPU was found (no loadable libcuda, or the "
                         "driver probe failed)")
    return "live" if info is not None else "replay"


def runs_live(arch: str = "sm_90a") -> bool:
    """True when this process runs kernels for ``arch`` live: live mode and a GPU of that arch."""
    if arch not in ARCH_CC:
        raise ValueError(f"arch={arch!r}: must be one of {sorted(ARCH_CC)}")
    if mode() != "live":
        return False
    info = device_info()
    return info is not None and info.cc == ARCH_CC[arch]


def why_not_live(arch: str = "sm_90a") -> str:
    """A sentence saying why kernels for ``arch`` do not run live here ("" when they do)."""
    if runs_live(arch):
        return ""
    if os.environ.get("ASYNCTC_MODE", "").strip().lower() == "replay":
        return "ASYNCTC_MODE=replay is set"
    info = device_info()
    if info is None:
        return "no GPU on this machine"
    cc = ARCH_CC[arch]
    return f"{arch} code needs compute capability {cc[0]}.{cc[1]}; this GPU ({info.name}) is " \
           f"{info.cc[0]}.{info.cc[1]}"


@functools.lru_cache(maxsize=1)
def device():
    """The :class:`cuda.core.Device` for GPU 0, made current. Raises :class:`NoGPUError` without one."""
    if device_info() is None:
        raise NoGPUError(f"cannot open GPU 0: {why_not_live()}")
    from cuda.core import Device
    d = Device(0)
    d.set_current()
    return d


@functools.lru_cache(maxsize=1)
def default_stream():
    """One non-default stream per process on which the course launches and times its work."""
    return device().create_stream()


# --------------------------------------------------------------------------------------------------
# Compilation
# --------------------------------------------------------------------------------------------------

def nvrtc_version() -> tuple[int, int]:
    """The NVRTC version cuda.bindings loads, e.g. (13, 5)."""
    from cuda.bindings import nvrtc
    res, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


@functools.lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """Include directories for NVRTC: our kernels, then the cudart and CCCL headers from the wheels.

    CCCL's ``<cuda/ptx>`` and ``<cuda/barrier>`` need the cudart include directory as well under
    NVRTC (measured); both are found with :func:`cuda.pathfinder.find_nvidia_header_directory`.
    """
    import cuda.pathfinder as pf
    dirs = [str(KERNEL_DIR)]
    for lib in ("cudart", "cccl"):
        try:
            d = pf.find_nvidia_header_directory(lib)
        except Exception:  # noqa: BLE001 - a missing optional header set is reported by NVRTC
            d = None
        if d:
            dirs.append(str(d))
    return tuple(dirs)


def cache_dir() -> Path:
    """Where compiled cubins are cached (``ASYNCTC_CACHE``, default ``~/.cache/asynctc``)."""
    return Path(os.environ.get("ASYNCTC_CACHE", Path.home() / ".cache" / "asynctc"))


def _header_digest() -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(KERNEL_DIR.rglob("*.cuh")):
        h.update(p.relative_to(KERNEL_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return h.digest()


@dataclasses.dataclass
class Resources:
    """ptxas's resource report for one kernel: registers per thread, static shared memory (bytes),
    stack frame, spill stores and loads (bytes)."""

    registers: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Parse ``ptxas -v`` output into {kernel name: :class:`Resources`}."""
    out: dict[str, Resources] = {}
    cur = None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\S+)", line) or \
            re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = out.setdefault(m.group(1), Resources())
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m:
            cur.stack_bytes, cur.spill_stores, cur.spill_loads = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur.registers = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            cur.shared_bytes = int(m.group(1))
    return out


@dataclasses.dataclass
class CompiledKernel:
    """A kernel compiled to cubin.

    ``cubin`` is the raw ELF (bytes); ``name`` the ``extern "C"`` entry point; ``arch`` the target;
    ``defines`` the compile-time parameters; ``log`` NVRTC's and ptxas's output; ``resources``
    ptxas's report for this entry. :meth:`kernel` loads it (needs a GPU of ``arch``).
    """

    source: str
    name: str
    arch: str
    defines: dict[str, Any]
    cubin: bytes
    log: str
    resources: Resources
    code: str | None = None     # the text compiled, where it is not the file's (compile_kernel)

    def kernel(self):
        """The loaded :class:`cuda.core.Kernel`. Raises :class:`NoGPUError` without a GPU of ``arch``."""
        if not runs_live(self.arch):
            raise NoGPUError(f"cannot load {self.name} ({self.arch}): {why_not_live(self.arch)}")
        return _load(self.cubin, self.name)

    def sass(self) -> str:
        """The disassembly of this cubin (nvdisasm), see :mod:`asynctc.core.sass`."""
        from . import sass
        return sass.disassemble(self.cubin)

    def source_text(self) -> str:
        """The CUDA C++ source this kernel was compiled from."""
        return self.code if self.code is not None else kernel_path(self.source).read_text()

    def ptx(self) -> str:
        """The PTX NVRTC makes of the same source and defines, for reading (:func:`compile_ptx`)."""
        return compile_ptx(self.source, self.arch, self.defines, self.code)


_loaded: dict[tuple[bytes, str], Any] = {}


def _load(cubin: bytes, name: str):
    key = (hashlib.sha1(cubin).digest(), name)
    if key not in _loaded:
        device()
        from cuda.core import ObjectCode
        _loaded[key] = ObjectCode.from_cubin(cubin).get_kernel(name)
    return _loaded[key]


def _fmt_define(k: str, v: Any) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
        raise ValueError(f"define name {k!r} is not a C identifier")
    if isinstance(v, bool):
        v = int(v)
    return f"{k}={v}"


_memo: dict[tuple, CompiledKernel] = {}


def kernel_path(source: str) -> Path:
    """The file ``asynctc/kernels/<source>``; ``source`` is a relative path inside ``kernels/``.

    Raises :class:`ValueError` for a non-string, an absolute path, a path with ``..``, a path that
    resolves (through links) outside ``kernels/``, or a missing file."""
    if not isinstance(source, str) or not source:
        raise ValueError(f"source={source!r}: must be a file name under {KERNEL_DIR.name}/")
    rel = Path(source)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"source={source!r}: must be a relative path inside {KERNEL_DIR.name}/ "
                         "(no absolute paths, no '..'): the course compiles only its own kernels")
    root = KERNEL_DIR.resolve()
    path = (root / rel).resolve()
    if path != root and root not in path.parents:
        raise ValueError(f"source={source!r}: resolves to {path}, outside {KERNEL_DIR.name}/")
    if not path.is_file():
        raise ValueError(f"source={source!r}: no such kernel file under {KERNEL_DIR.name}/")
    return path


def compile_kernel(source: str, name: str, arch: str = "sm_90a",
                   defines: dict[str, Any] | None = None,
                   extra_options: dict[str, Any] | None = None,
                   code: str | None = None) -> CompiledKernel:
    """Compile ``asynctc/kernels/<source>`` to cubin for ``arch`` and return entry ``name``.

    Parameters
    ----------
    source: file name under ``asynctc/kernels/`` (e.g. ``"mma_sync.cu"``).
    name: the ``extern "C"`` ``__global__`` function to return.
    arch: ``"sm_90a"`` or ``"sm_100a"`` (or the plain ``sm_90``/``sm_100``); never a virtual arch.
    defines: compile-time parameters, passed as ``-DKEY=VALUE``.
    extra_options: further :class:`cuda.core.ProgramOptions` fields (e.g. ``max_register_count``).
    code: the text to compile in place of the file's: an edited copy of it (chapter 06's
        consumer-loop exercise splices a learner's loop body into its kernel). ``source`` still
        names the program (in NVRTC's messages; its includes resolve as the file's would).

    Works without a GPU. The cubin is cached on disk, keyed by source, headers, options, arch and
    NVRTC version (:func:`cuda.core.utils.make_program_cache_key`).

    Raises :class:`ValueError` for an unknown arch, a missing file or a ``source`` outside
    ``kernels/`` (an absolute path, ``..``, a link leading out), and :class:`CompileError` with
    the NVRTC log when compilation fails. ptxas diagnostics that mean lost performance become
    :class:`PerformanceWarning` (see :func:`performance_diagnostics`), its other warnings
    :class:`UserWarning`; both again on every cache hit.
    """
    if arch not in ARCH_CC:
        raise ValueError(f"arch={arch!r}: the course compiles for {sorted(ARCH_CC)} "
                         "(real architectures only, so the result is cubin, never PTX)")
    path = kernel_path(source)
    defines = dict(defines or {})
    memo_key = (source, name, arch, tuple(sorted(defines.items())),
                tuple(sorted((extra_options or {}).items())))
    edited = code is not None
    code = code if edited else path.read_text()
    hdr = _header_digest()
    memo_key = memo_key + (hashlib.sha1(code.encode()).digest(), hdr)
    if memo_key in _memo:
        return _memo[memo_key]

    from cuda.core import Program, ProgramOptions
    from cuda.core.utils import FileStreamProgramCache, make_program_cache_key

    opts = ProgramOptions(
        name=source, arch=arch, std="c++17", include_path=list(include_dirs()),
        define_macro=[_fmt_define(k, v) for k, v in sorted(defines.items())] or None,
        ptxas_options=["-v", "--warn-on-spills"], **(extra_options or {}))
    key = make_program_cache_key(code=code, code_type="c++", options=opts, target_type="cubin",
                                 extra_digest=hdr)
    cdir = cache_dir()
    cdir.mkdir(parents=True, exist_ok=True)
    with FileStreamProgramCache(str(cdir / "programs")) as cache:
        cubin = cache.get(key)
        log_key = key + b".log"
        if cubin is not None:
            log = (cache.get(log_key) or b"").decode(errors="replace")
            if name not in parse_ptxas(log):
                cubin = None          # an entry without its ptxas report: rebuild both
            else:
                _surface_warnings(log, source)
        if cubin is None:
            logbuf = io.StringIO()
            try:
                obj = Program(code, "c++", opts).compile("cubin", logs=logbuf)
            except Exception as e:  # NVRTC errors come back as various cuda.core exceptions
                raise CompileError(
                    f"NVRTC failed to compile {source} (kernel {name}, arch {arch}, defines "
                    f"{defines}):\n{logbuf.getvalue() or ''}{e}") from None
            cubin = bytes(obj.code)
            log = logbuf.getvalue()
            cache[key] = cubin
            cache[log_key] = log.encode()
            _surface_warnings(log, source)
    res = parse_ptxas(log)
    if name not in res and not re.search(rf"\b{name}\b", log):
        # The entry may exist even if ptxas printed nothing for it; check the ELF symbol table.
        if name.encode() not in cubin:
            raise CompileError(f"{source} compiled for {arch}, but it has no kernel named {name!r}")
    ck = CompiledKernel(source=source, name=name, arch=arch, defines=defines, cubin=cubin,
                        log=log, resources=res.get(name, Resources()), code=code if edited else None)
    _memo[memo_key] = ck
    return ck


def compile_ptx(source: str, arch: str = "sm_90a", defines: dict[str, Any] | None = None,
                code: str | None = None) -> str:
    """The PTX NVRTC makes of ``kernels/<source>`` for ``arch`` with ``defines`` (``code``: an
    edited copy, as :func:`compile_kernel`), every entry point of the module: **for reading only**
    (a notebook prints a kernel's ``wgmma.mma_async`` line); the course runs cubin, never PTX.

    Calls NVRTC through ``cuda.bindings.nvrtc``: cuda.core's ``Program.compile("ptx")`` asks the
    driver for its version, and a machine without a GPU has none. Works without a GPU; the text is
    cached on disk beside the cubins (``<cache>/ptx/``), keyed by the source, headers, options and
    NVRTC version. Raises :class:`ValueError` as :func:`compile_kernel` does (arch, source) and
    :class:`CompileError` with NVRTC's log."""
    if arch not in ARCH_CC:
        raise ValueError(f"arch={arch!r}: must be one of {sorted(ARCH_CC)}")
    path = kernel_path(source)
    code = path.read_text() if code is None else code
    from cuda.bindings import nvrtc
    from cuda.core import ProgramOptions
    opts = ProgramOptions(name=source, arch=arch, std="c++17", include_path=list(include_dirs()),
                          define_macro=[_fmt_define(k, v) for k, v in sorted((defines or {}).items())]
                          or None).as_bytes("nvrtc")
    h = hashlib.blake2b(digest_size=16)
    for part in (code.encode(), _header_digest(), repr(nvrtc_version()).encode(), *opts):
        h.update(part + b"\0")
    cached = cache_dir() / "ptx" / f"{h.hexdigest()}.ptx"
    if cached.is_file():
        return cached.read_text()
    err, prog = nvrtc.nvrtcCreateProgram(code.encode(), source.encode(), 0, [], [])
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, n = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * n
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise CompileError(f"NVRTC failed to compile {source} to PTX (arch {arch}, defines "
                               f"{defines}):\n{log.decode(errors='replace').rstrip(chr(0))}")
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    text = buf.decode().rstrip("\x00")
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, cached)
    return text


#: ptxas lines that mean lost performance, whatever their level (most are "info"), as measured
#: with NVRTC 13.5 on kernels/diagnostics.cu:
#:   (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count
#:           at entry.
#:   (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to
#:           insufficient register resources for the wgmma pipeline in the function '...'
#:   (C7519) Potential Performance Loss: wgmma.mma_async instructions are serialized due to
#:           program dependence on compiler-inserted WG.AR in divergent path in the function '...'
#:   (C7517) wgmma.wait_group is injected in around line N by compiler to allow use of registers
#:           defined by GMMA in function '...'
#:   warning : Registers are spilled to local memory in function '...', N bytes spill stores, ...
#: "Potential Performance Loss" also covers the other serialization reasons ptxas gives (extern
#: calls, non-wgmma instructions defining accumulators, ...).
_PERF_PATTERNS = (r"Potential Performance Loss", r"\bseriali[sz]ed\b", r"wgmma\.wait_group is injected",
                  r"\bspill(?:ed|s)?\b.*\blocal memory\b", r"setmaxnreg.*ignored")


def performance_diagnostics(log: str) -> list[str]:
    """The lines of a ptxas log that mean lost performance (see :class:`PerformanceWarning`): the
    patterns above, and every function whose resource report shows spill stores or loads."""
    out = []
    for line in log.replace("\x00", "").splitlines():
        if any(re.search(p, line) for p in _PERF_PATTERNS):
            out.append(line.strip())
    for fn, r in parse_ptxas(log).items():
        if (r.spill_stores or r.spill_loads) and not any(fn in o and "spill" in o for o in out):
            out.append(f"{fn}: {r.spill_stores} bytes spill stores, {r.spill_loads} bytes spill "
                       "loads")
    return out


def _surface_warnings(log: str, source: str) -> None:
    perf = performance_diagnostics(log)
    for line in perf:
        warnings.warn(f"{source}: {line}", PerformanceWarning, stacklevel=3)
    for line in log.replace("\x00", "").splitlines():
        if line.strip() in perf:
            continue
        if re.search(r"\bwarning\b", line, re.IGNORECASE):
            warnings.warn(f"{source}: {line.strip()}", UserWarning, stacklevel=3)


# --------------------------------------------------------------------------------------------------
# Launch
# --------------------------------------------------------------------------------------------------

STATIC_SMEM_LIMIT = 48 * 1024

#: Block limits of compute capability 9.0 / 10.0 (CUDA C++ Programming Guide, "Compute
#: Capabilities", table "Technical Specifications per Compute Capability"): x and y ≤ 1024,
#: z ≤ 64, at most 1024 threads; grid x ≤ 2^31 − 1, y and z ≤ 65535.
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Thread block clusters: "a maximum of 8 thread blocks in a cluster is supported as a portable
#: cluster size" (CUDA C++ Programming Guide, "Thread Block Clusters"); larger, non-portable sizes
#: need CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, which the course does not set. The
#: grid (in blocks) must be a multiple of the cluster in every dimension (same section; the
#: driver launches it through CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION of cuLaunchKernelEx).
MAX_CLUSTER = 8


def _is_int(v) -> bool:
    import numbers
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _as3(x, what: str) -> tuple[int, int, int]:
    """1–3 positive integers (Python or numpy integers; never bools) → a 3-tuple of ints."""
    t = (x,) if _is_int(x) or isinstance(x, bool) else x
    try:
        t = tuple(t)
    except TypeError:
        raise LaunchConfigError(f"{what}={x!r}: must be 1–3 positive integers") from None
    if not 1 <= len(t) <= 3 or any(not _is_int(v) or v < 1 for v in t):
        raise LaunchConfigError(f"{what}={x!r}: must be 1–3 positive integers (bools are not "
                                "dimensions)")
    return tuple(int(v) for v in t) + (1,) * (3 - len(t))  # type: ignore[return-value]


def check_launch(grid, block, shmem_bytes: int, compiled: CompiledKernel | None = None,
                 cluster=None) -> None:
    """Check a launch configuration against CUDA's limits before the driver sees it.

    ``grid`` (in blocks, as in CUDA C++), ``block`` and ``cluster`` (blocks per cluster, or None):
    an int or 1–3 ints (Python or numpy integers; bools are refused). Rules (CUDA C++ Programming
    Guide, "Compute Capabilities", :data:`MAX_BLOCK`, :data:`MAX_GRID`): block x, y ≤ 1024, z ≤ 64,
    at most 1024 threads per block; grid x ≤ 2^31 − 1, y, z ≤ 65535; dynamic shared memory ≥ 0
    and ≤ the device's opt-in maximum per block (227 KiB on sm_90) minus the kernel's static
    shared memory. Clusters (:data:`MAX_CLUSTER`, "Thread Block Clusters"): each dimension ≤ 8,
    at most 8 blocks per cluster (portable size), the grid a multiple of the cluster in every
    dimension, and a kernel compiled for compute capability ≥ 9.0.
    Raises :class:`LaunchConfigError` naming the field, value and rule.
    """
    g = _as3(grid, "grid")
    b = _as3(block, "block")
    for i, ax in enumerate("xyz"):
        if b[i] > MAX_BLOCK[i]:
            raise LaunchConfigError(f"block={b}: block.{ax} = {b[i]}; the limit is {MAX_BLOCK[i]} "
                                    "(CUDA C++ Programming Guide, Compute Capabilities)")
    threads = b[0] * b[1] * b[2]
    if threads > MAX_THREADS:
        raise LaunchConfigError(f"block={b}: {threads} threads per block; the limit is {MAX_THREADS}")
    for i, ax in enumerate("xyz"):
        if g[i] > MAX_GRID[i]:
            raise LaunchConfigError(f"grid={g}: grid.{ax} = {g[i]}; grid.x must be ≤ 2^31 − 1 and "
                                    "grid.y, grid.z ≤ 65535 (CUDA C++ Programming Guide, Compute "
                                    "Capabilities)")
    if cluster is not None:
        c = _as3(cluster, "cluster")
        if any(v > MAX_CLUSTER for v in c) or c[0] * c[1] * c[2] > MAX_CLUSTER:
            raise LaunchConfigError(f"cluster={c}: {c[0] * c[1] * c[2]} blocks per cluster; the "
                                    f"portable cluster size is at most {MAX_CLUSTER} blocks "
                                    "(CUDA C++ Programming Guide, Thread Block Clusters)")
        for i, ax in enumerate("xyz"):
            if g[i] % c[i]:
                raise LaunchConfigError(f"grid={g}, cluster={c}: grid.{ax} = {g[i]} is not a "
                                        f"multiple of cluster.{ax} = {c[i]}; the grid must be a "
                                        "whole number of clusters (CUDA C++ Programming Guide, "
                                        "Thread Block Clusters)")
        if compiled is not None and ARCH_CC[compiled.arch] < (9, 0):
            raise LaunchConfigError(f"cluster={c}: {compiled.name} is compiled for "
                                    f"{compiled.arch}; clusters need compute capability ≥ 9.0")
    if not _is_int(shmem_bytes) or shmem_bytes < 0:
        raise LaunchConfigError(f"shmem_bytes={shmem_bytes!r}: must be ≥ 0 (an integer)")
    info = device_info()
    limit = info.smem_optin_bytes if info else 227 * 1024
    static = compiled.resources.shared_bytes if compiled else 0
    if shmem_bytes + static > limit:
        raise LaunchConfigError(
            f"shmem_bytes={shmem_bytes} (+{static} static): exceeds the device's opt-in shared "
            f"memory per block, {limit} bytes")


def launch_config_kwargs(grid, block, shmem_bytes: int = 0, cluster=None) -> dict:
    """Keyword arguments for :class:`cuda.core.LaunchConfig` (cuda.core 1.2), after
    :func:`check_launch`. ``grid`` is in blocks, as everywhere in asynctc; with a ``cluster``,
    cuda.core's ``grid`` counts *clusters* ("When cluster is specified, the grid parameter
    represents the number of clusters (not blocks)", ``LaunchConfig`` docstring), so it is divided
    here. Returns {"grid", "block", "shmem_size"[, "cluster"]} with 3-tuples of ints."""
    check_launch(grid, block, shmem_bytes, cluster=cluster)
    g, b = _as3(grid, "grid"), _as3(block, "block")
    kw: dict[str, Any] = {"grid": g, "block": b, "shmem_size": int(shmem_bytes)}
    if cluster is not None:
        c = _as3(cluster, "cluster")
        kw["grid"] = tuple(gi // ci for gi, ci in zip(g, c))
        kw["cluster"] = c
    return kw


def launch(compiled: CompiledKernel, grid, block, *args, shmem_bytes: int = 0, stream=None,
           cluster=None) -> None:
    """Launch ``compiled`` on ``stream`` (default: :func:`default_stream`).

    ``grid`` in blocks; ``cluster`` blocks per cluster (None: no cluster), checked by
    :func:`check_launch` and passed to cuda.core by :func:`launch_config_kwargs`. ``args`` are
    passed to :func:`cuda.core.launch` (device arrays are passed by pointer; numpy scalars carry
    their C type). Dynamic shared memory above 48 KiB is enabled first with
    ``cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`` (CUDA driver API).
    Raises :class:`LaunchConfigError` before launching when the configuration breaks a limit, and
    :class:`NoGPUError` without a GPU of the kernel's arch.
    """
    from cuda.core import LaunchConfig
    from cuda.core import launch as _launch
    check_launch(grid, block, shmem_bytes, compiled, cluster=cluster)
    kw = launch_config_kwargs(grid, block, shmem_bytes, cluster)
    k = compiled.kernel()
    if shmem_bytes + compiled.resources.shared_bytes > STATIC_SMEM_LIMIT:
        _set_max_dynamic_smem(k, int(shmem_bytes))
    cfg = LaunchConfig(**kw)
    s = stream if stream is not None else default_stream()
    _launch(s, cfg, k, *[_arg(a) for a in args])


_smem_set: dict[int, int] = {}   # kernel handle -> dynamic smem limit already set


def _set_max_dynamic_smem(kernel, nbytes: int) -> None:
    from cuda.bindings import driver
    key = int(kernel.handle)
    if _smem_set.get(key, -1) >= nbytes:
        return
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = driver.cuKernelSetAttribute(attr, nbytes, kernel.handle, device().device_id)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise LaunchConfigError(f"cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={nbytes}) "
                                f"failed: {err}")
    _smem_set[key] = nbytes


def _arg(a):
    # A device array (asynctc.core.memory.DeviceArray) passes its cuda.core Buffer; runtime does not
    # import memory (memory builds on runtime, not the reverse).
    launch_arg = getattr(a, "_launch_arg", None)
    return launch_arg() if callable(launch_arg) else a


def _precompile_one(job):
    src, name, defines = job
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_kernel(src, name, "sm_90a", defines=defines)
    return name


def precompile(jobs, workers: int | None = None) -> None:
    """Compile (source, entry, defines) jobs in parallel processes so that the on-disk cubin cache
    is warm; later :func:`compile_kernel` calls then only read it. No GPU needed."""
    jobs = list(jobs)
    workers = workers or min(len(jobs), max(1, (os.cpu_count() or 2) - 1))
    if workers <= 1 or len(jobs) <= 1:
        for j in jobs:
            _precompile_one(j)
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
        list(ex.map(_precompile_one, jobs))
