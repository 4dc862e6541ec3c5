build/kernels/attention.o: kernels/attention.c kernels/attention.h \
 kernels/matmul.h
kernels/attention.h:
kernels/matmul.h:
