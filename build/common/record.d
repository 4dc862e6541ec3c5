build/common/record.o: common/record.c common/record.h common/machine.h \
 common/csvio.h common/err.h
common/record.h:
common/machine.h:
common/csvio.h:
common/err.h:
