build/src/main.o: src/main.c src/../common/err.h src/../common/stats.h \
 src/commands.h
src/../common/err.h:
src/../common/stats.h:
src/commands.h:
