build/model/config.o: model/config.c model/config.h \
 model/../common/csvio.h model/../common/err.h model/../common/machine.h
model/config.h:
model/../common/csvio.h:
model/../common/err.h:
model/../common/machine.h:
