// libsystemc.so calls sc_main from its own main(). tpusim's tools and tests
// have their own main() and start SystemC through sc_elaborate/sc_start, but
// the shared library still needs the symbol to link. Defined once, here.
#include <systemc>

extern "C" int sc_main(int, char**) { return 0; }
