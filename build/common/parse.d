build/common/parse.o: common/parse.c common/parse.h common/err.h
common/parse.h:
common/err.h:
