// Malformed widening descriptors (testbench/lit/sim/dma-widening.s).
.dma_descriptor 0, src=vmem:0, dst=vmem:64, inner=16, elem=2
.dma_descriptor 0, src=hbm:1, dst=vmem:64, inner=16, elem=2
.dma_descriptor 0, src=hbm:0, dst=vmem:64, inner=16, elem=3
