build/common/mem.o: common/mem.c common/mem.h common/err.h
common/mem.h:
common/err.h:
