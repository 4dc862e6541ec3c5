build/common/stats.o: common/stats.c common/stats.h
common/stats.h:
