// libsystemc references sc_main (tpusim_dma links SystemC for DmaSystem);
// Catch2 provides main(), so this one never runs. C linkage, as SystemC
// declares it.
extern "C" int sc_main(int, char**) { return 0; }
