// One 1 GiB HBM-to-HBM copy, then a wait for it: --max-cycles must stop the
// run at the limit, not after the whole transfer was simulated.
.chip v5e
.dma_descriptor 0, src=hbm:0x0, dst=hbm:0x40000000, inner=1048576, counts=[1024], src_strides=[1048576], dst_strides=[1048576]
main:
    sli s0, 0
    dma s0, f0, q0
    sync.wait f0, 1
    halt
