build/kernels/adamw.o: kernels/adamw.c kernels/adamw.h
kernels/adamw.h:
