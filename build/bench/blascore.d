build/bench/blascore.o: bench/blascore.c bench/blascore.h \
 bench/../common/machine.h bench/../common/csvio.h bench/../common/err.h \
 bench/../kernels/matmul.h
bench/blascore.h:
bench/../common/machine.h:
bench/../common/csvio.h:
bench/../common/err.h:
bench/../kernels/matmul.h:
