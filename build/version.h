#define CB_GIT_REV "unknown-dirty"
#define CB_CFLAGS "cc -std=c11 -D_GNU_SOURCE -g -fopenmp -O3 -march=native -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wno-format-truncation"
