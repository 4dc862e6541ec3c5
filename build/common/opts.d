build/common/opts.o: common/opts.c common/opts.h common/err.h \
 common/parse.h
common/opts.h:
common/err.h:
common/parse.h:
