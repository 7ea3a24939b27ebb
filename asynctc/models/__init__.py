"""Pure-Python models of the hardware (descriptors, layouts, Tensor Memory): no GPU needed."""
