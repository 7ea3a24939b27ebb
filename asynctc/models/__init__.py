"""Pure-Python models of the hardware, no GPU needed: they run on any machine, predict what a kernel
will do (layouts, barrier protocols, timelines) and are compared with the GPU's measurements.

- :mod:`asynctc.models.pipeline` — chapter 05's TMA → wgmma ring: an mbarrier model (PTX ISA
  "mbarrier"), a discrete-event schedule of the producer and the consumer warpgroups, the depth
  sweep it predicts, and the broken protocols with their diagnoses (deadlock or race).
"""
