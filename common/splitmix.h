/* splitmix.h: splitmix64 (Steele, Lea and Flood 2014; Vigna's reference), the one copy: the
 * initialisation's normal numbers (model/gpt_state.c) and the dataset's sample order
 * (model/dataset.c) draw from it. */
#ifndef CB_SPLITMIX_H
#define CB_SPLITMIX_H

/* The next number of the generator whose state is *s. */
static inline unsigned long long splitmix64(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* x hashed: the number a generator in state x draws next. */
static inline unsigned long long splitmix64_hash(unsigned long long x) { return splitmix64(&x); }

#endif
