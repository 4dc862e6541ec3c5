build/kernels/layernorm.o: kernels/layernorm.c kernels/layernorm.h
kernels/layernorm.h:
