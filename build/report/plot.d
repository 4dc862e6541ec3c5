build/report/plot.o: report/plot.c report/plot.h \
 /usr/include/plplot/plplot.h /usr/include/plplot/plConfig.h \
 /usr/include/plplot/pldll.h report/../common/csvio.h \
 report/../common/err.h
report/plot.h:
/usr/include/plplot/plplot.h:
/usr/include/plplot/plConfig.h:
/usr/include/plplot/pldll.h:
report/../common/csvio.h:
report/../common/err.h:
