// Malformed paired descriptors (testbench/lit/sim/dma-pair.s).
.dma_descriptor 0, src=hbm:0, dst=vmem:64, inner=16, pair=256
.dma_descriptor 0, src=vmem:0, dst=hbm:64, inner=16, elem=1, pair=256
.dma_descriptor 0, src=hbm:0, dst=vmem:64, inner=16, elem=2, pair=255
.dma_descriptor 0, src=hbm:0, dst=vmem:64, inner=16, elem=1, pair=0
