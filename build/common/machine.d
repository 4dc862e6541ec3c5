build/common/machine.o: common/machine.c common/machine.h common/mem.h \
 build/version.h
common/machine.h:
common/mem.h:
build/version.h:
