build/common/csvio.o: common/csvio.c common/csvio.h common/err.h \
 common/parse.h
common/csvio.h:
common/err.h:
common/parse.h:
