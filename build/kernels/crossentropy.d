build/kernels/crossentropy.o: kernels/crossentropy.c \
 kernels/crossentropy.h
kernels/crossentropy.h:
