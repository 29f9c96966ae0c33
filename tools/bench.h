// `fusedmoe bench`: benchmarks following shared/benchmark-protocol.md.
#pragma once
int cmd_bench(int argc, char** argv);
