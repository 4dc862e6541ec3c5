build/kernels/rope.o: kernels/rope.c kernels/rope.h
kernels/rope.h:
