build/bench/peak.o: bench/peak.c bench/peak.h bench/../common/machine.h \
 bench/../common/record.h bench/../common/machine.h bench/runner.h \
 bench/../common/stats.h bench/../common/csvio.h bench/../common/err.h \
 bench/../common/mem.h bench/../kernels/matmul.h bench/blascore.h
bench/peak.h:
bench/../common/machine.h:
bench/../common/record.h:
bench/../common/machine.h:
bench/runner.h:
bench/../common/stats.h:
bench/../common/csvio.h:
bench/../common/err.h:
bench/../common/mem.h:
bench/../kernels/matmul.h:
bench/blascore.h:
