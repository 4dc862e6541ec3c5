build/kernels/gelu.o: kernels/gelu.c kernels/gelu.h
kernels/gelu.h:
