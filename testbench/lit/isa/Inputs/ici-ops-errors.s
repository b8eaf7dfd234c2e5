    dma.remote s0, s3, f2, q0
    dma.remote s0, s3, f2, f1, f0
    sync.remote f4, 1
    chip.id s1 ;; chip.count s2
