/* costbench allreduce: the collective microbenchmark (run it under mpirun). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../bench/coll_bench.h"
#include "../bench/comm.h"
#include "../common/cliflags.h"
#include "../common/csvio.h"
#include "../common/err.h"
#include "../common/machine.h"
#include "../common/mem.h"
#include "../common/opts.h"
#include "../common/parse.h"
#include "../common/record.h"
#include "../common/schema.h"
#include "commands.h"

/* The interconnect the ranks see, as one data/hardware.csv row: one rank per "instance", the
 * network bandwidth = the largest all-reduce's busbw, the latency per hop = the smallest
 * all-reduce's time / 2(n-1) (a ring's hop count). */
static int write_profile(const char *path, const record *rec, const machine_info *m)
{
    double busbw = 0, small_us = INFINITY, big = 0;
    int n = comm_size();
    for (int i = 0; i < rec->nrows; i++) {
        const double *r = rec->num + (size_t)i * rec->ncols;
        if (strcmp(rec->str[(size_t)i * rec->ncols + AR_OP], allreduce_ops[AR_OP_ALLREDUCE]) != 0) continue;
        if (r[AR_SIZE_BYTES] >= big) big = r[AR_SIZE_BYTES], busbw = r[AR_BUSBW];
        if (r[AR_T_MED] < small_us) small_us = r[AR_T_MED];
    }
    if (big == 0) return err_msg("--profile: no all-reduce was measured");
    char src[512];
    snprintf(src, sizeof src,
             "measured here by costbench allreduce: %d ranks, all-reduce busbw at %.0f bytes and latency at the "
             "smallest size; %s, %s",
             n, big, m->cpu_model, m->date_utc);
    /* one data/hardware.csv row, its columns as common/schema.h defines them (NaN: unknown) */
    const char *str[HW_NCOLS] = {[HW_INSTANCE_TYPE] = CB_THIS_MACHINE " (per rank)",
                                 [HW_ACCELERATOR] = "CPU cores of one rank",
                                 [HW_SOURCE] = src, [HW_NETWORK_SOURCE] = ""};
    double num[HW_NCOLS] = {[HW_ACCELERATORS] = 1, [HW_WORKERS] = 1, [HW_BF16_TFLOPS] = NAN, [HW_FP32_TFLOPS] = NAN,
                            [HW_MEM_GIB] = m->mem_total_bytes / 1073741824.0 / n, [HW_MEM_GB_PER_S] = NAN,
                            [HW_INTRA_GB_PER_S] = NAN, [HW_NETWORK_GBIT_PER_S] = busbw * 8,
                            [HW_NETWORK_LATENCY_US] = small_us / (2.0 * (n - 1)), [HW_NETWORK_BUSBW_GBIT_PER_S] = NAN};
    csv_writer w;
    if (csvw_open(&w, path) != 0) return CB_EFAIL;
    for (int i = 0; i < HW_NCOLS; i++) csvw_str(&w, hw_schema[i].col.name);
    csvw_endrow(&w);
    for (int i = 0; i < HW_NCOLS; i++) {
        if (hw_schema[i].col.kind == REC_STR) csvw_str(&w, str[i]);
        else csvw_num(&w, num[i]);
    }
    csvw_endrow(&w);
    if (csvw_commit(&w) != 0) return CB_EFAIL;
    fprintf(stderr, "wrote %s: %.1f Gbit/s, %.2f us per hop\n", path, busbw * 8, small_us / (2.0 * (n - 1)));
    return 0;
}

int cmd_allreduce(int argc, char **argv)
{
    /* nccl-tests' short flags: -b min bytes, -e max bytes, -f factor */
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-b") == 0) argv[i] = "--min-bytes";
        else if (strcmp(argv[i], "-e") == 0) argv[i] = "--max-bytes";
        else if (strcmp(argv[i], "-f") == 0) argv[i] = "--step-factor";
    }
    long minb = 8, maxb = 256L << 20;
    double factor = 2, min_time = 0.2;
    const char *ops = "allreduce,reduce_scatter,allgather", *csv = NULL, *profile = NULL;
    const opt_spec specs[] = {
        {"min-bytes", OPT_LONG, &minb, 4, 1L << 40, 0, 0, "BYTES",
         "-b: smallest message (default 8; K/M/G and Ki/Mi/Gi suffixes)"},
        {"max-bytes", OPT_LONG, &maxb, 4, 1L << 40, 0, 0, "BYTES", "-e: largest message (default 256Mi)"},
        {"step-factor", OPT_DOUBLE, &factor, 0, 0, 1.01, 1024, "F",
         "-f: size multiplier from one size to the next (default 2)"},
        {"ops", OPT_STR, &ops, 0, 0, 0, 0, "LIST", "allreduce,reduce_scatter,allgather (default all three)"},
        {"min-time", OPT_DOUBLE, &min_time, 0, 0, 0.001, 60, "S", "time per size and op (default 0.2)"},
        CSV_FLAG_SPEC(&csv, "also write CSV (rank 0)"),
        {"profile", OPT_STR, &profile, 0, 0, 0, 0, "FILE",
         "write the measured all-reduce bandwidth and latency as a data/hardware.csv row for costbench scale "
         "--hardware"},
        {0},
    };
    int rc = opts_parse("allreduce", "[-b BYTES] [-e BYTES] [-f F] [options]   (under mpirun -np N)", specs, argc, argv,
                        2, NULL, NULL);
    if (rc != 0) return rc > 0 ? 0 : rc;
    if (minb > maxb) return err_usage("flag '--min-bytes': %ld is larger than --max-bytes %ld", minb, maxb);
    coll_opts o;
    memset(&o, 0, sizeof o);
    o.min_bytes = (double)minb, o.max_bytes = (double)maxb, o.factor = factor, o.min_time_s = min_time, o.min_iters = 5;
    char buf[256], *words[8];
    int nw = parse_word_list(ops, "flag '--ops'", 0, buf, sizeof buf, words, 8);
    if (nw < 0) return nw;
    for (int i = 0; i < nw; i++) {
        int k = -1;
        for (int j = 0; j < COLL_COUNT; j++)
            if (strcmp(words[i], allreduce_ops[j]) == 0) k = j;
        if (k < 0)
            return err_usage("flag '--ops': expected allreduce, reduce_scatter or allgather, got '%s'", words[i]);
        o.ops[k] = 1;
    }
    /* two buffers of the largest size on every rank of this machine */
    if ((rc = mem_check_fits(2.0 * (double)maxb * comm_size(), "allreduce --max-bytes on every rank")) != 0) return rc;
    machine_info m;
    machine_probe(&m);
    record rec;
    record_init(&rec, allreduce_cols, AR_NCOLS);
    record_note(&rec, "%s on %s; fp32 sums; time = the slowest rank's median per call", comm_describe(), m.cpu_model);
    record_note(&rec, "algbw = bytes / time; busbw = algbw x 2(n-1)/n (all-reduce) or x (n-1)/n (reduce-scatter, "
                      "all-gather), as nccl-tests");
    if (comm_size() == 1)
        record_note(&rec, "one rank: the collectives are copies; run under 'mpirun -np N' to measure communication");
    if (profile && (!o.ops[COLL_ALLREDUCE] || comm_size() < 2))
        return err_usage("flag '--profile': needs the allreduce op and at least 2 ranks (run under mpirun -np N)");
    rc = coll_bench_run(&o, &rec);
    if (rc == 0 && comm_rank() == 0) {
        record_print(&rec, stdout);
        if (csv) rc = record_write_csv(&rec, csv, &m);
        if (rc == 0 && profile) rc = write_profile(profile, &rec, &m);
    }
    record_free(&rec);
    return rc;
}
