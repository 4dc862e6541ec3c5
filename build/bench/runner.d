build/bench/runner.o: bench/runner.c bench/runner.h \
 bench/../common/stats.h bench/../common/err.h bench/../common/timer.h
bench/runner.h:
bench/../common/stats.h:
bench/../common/err.h:
bench/../common/timer.h:
