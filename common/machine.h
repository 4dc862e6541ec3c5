/* machine.h: where a result came from (CPU, cores, threads, BLAS kernel, build, date).
 * Every result file carries these fields. */
#ifndef CB_MACHINE_H
#define CB_MACHINE_H

typedef struct {
    char cpu_model[128];
    int cores;                 /* online logical CPUs */
    int threads;               /* OpenMP threads our kernels use */
    int blas_threads;          /* OpenBLAS threads */
    char blas_core[32];        /* OpenBLAS kernel in use (openblas_get_corename) */
    char blas_core_env[32];    /* OPENBLAS_CORETYPE as the user's environment set it ("" if unset) */
    char blas_core_choice[32]; /* --blas-core: auto, env or a kernel name */
    double llc_bytes;          /* last-level cache (0 if unknown) */
    double mem_total_bytes;
    char omp_wait_policy[16];  /* OMP_WAIT_POLICY or "default" */
    char cflags[256];
    char git_rev[48];
    char date_utc[32];
} machine_info;

/* The instance type of results measured on this machine ("this machine"); profiles of it
 * (`costbench allreduce --profile`: "this machine (per rank)") start with it too. */
#define CB_THIS_MACHINE "this machine"
int machine_is_this_machine(const char *instance_type);

/* Fills the CPU, memory, build and date fields (BLAS fields are left to the caller). */
void machine_probe(machine_info *m);
/* Whether /proc/cpuinfo lists `flag` (e.g. "avx512f", "avx512_bf16"). */
int machine_has_cpu_flag(const char *flag);
/* The path of data table `name` ("models.csv") into out: in $COSTBENCH_DATA, else in data/ next
 * to the executable, else in ./data. Returns 0, or CB_EUSAGE when the path does not fit. */
#include <stddef.h>
int machine_data_file(char *out, size_t n, const char *name);

#endif
