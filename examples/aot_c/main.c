/* A C client of three tfn modules built ahead of time (`tfnc build`, see docs/aot.md):
 *
 *   tfnc build examples/aot_c/nn.tfn --fn gelu --arg 'x=f32[?, ?]' -o build --prefix g
 *   tfnc build examples/aot_c/nn.tfn --fn softmax_rows --arg 'x=f32[?, ?]' -o build --prefix s
 *   tfnc build examples/aot_c/nn.tfn --fn linear --arg 'x=f32[?, ?]' --arg 'w=f32[?, ?]' --arg 'b=f32[?]' \
 *       -o build --prefix m
 *   cc -O2 -Ibuild examples/aot_c/main.c build/g.o build/s.o build/m.o build/libtfn_rt.a \
 *       -lpthread -ldl -lm -o aot_demo
 *
 * Usage: aot_demo THREADS REPEAT FN OUT.bin IN.bin DIMS [IN.bin DIMS]...
 *   FN is gelu, softmax_rows or linear; each input is a file of raw little-endian f32 and
 *   its sizes as AxB (a number alone for rank 1). The output is written to OUT.bin as raw
 *   f32; its sizes are printed. REPEAT > 1 times the calls (first call, then the median and
 *   minimum of the others) on stderr. Exit code 0 on success, 1 on any error (message on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "g.h"
#include "m.h"
#include "s.h"

typedef int (*entry_fn)(const tfn_buffer *, tfn_buffer *);
typedef int (*shape_fn)(const tfn_buffer *, int64_t, tfn_buffer *);

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int64_t elements(const tfn_buffer *b) {
    int64_t n = 1;
    for (int64_t a = 0; a < b->rank; a++) n *= b->sizes[a];
    return n;
}

/* Reads IN.bin with sizes DIMS ("3x4") into b. */
static int read_input(const char *path, const char *dims, tfn_buffer *b) {
    memset(b, 0, sizeof *b);
    b->dtype = TFN_F32;
    const char *p = dims;
    while (*p) {
        if (b->rank == TFN_MAX_RANK) return fprintf(stderr, "too many sizes: %s\n", dims), 1;
        char *end;
        b->sizes[b->rank++] = strtoll(p, &end, 10);
        if (end == p) return fprintf(stderr, "bad sizes: %s\n", dims), 1;
        p = *end == 'x' ? end + 1 : end;
    }
    tfn_buffer_row_major(b);
    int64_t n = elements(b);
    b->data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    FILE *f = fopen(path, "rb");
    if (!f || !b->data) return fprintf(stderr, "cannot read %s\n", path), 1;
    size_t got = fread(b->data, sizeof(float), (size_t)n, f);
    fclose(f);
    if ((int64_t)got != n) return fprintf(stderr, "%s: expected %lld floats\n", path, (long long)n), 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 7 || (argc - 5) % 2 != 0) {
        fprintf(stderr, "usage: %s THREADS REPEAT FN OUT.bin IN.bin DIMS [IN.bin DIMS]...\n", argv[0]);
        return 1;
    }
    tfn_rt_set_threads(atoll(argv[1]));
    int repeat = atoi(argv[2]);
    const char *fn = argv[3];
    entry_fn entry;
    shape_fn shape;
    if (!strcmp(fn, "gelu")) {
        entry = g_gelu, shape = g_gelu_output_shape;
    } else if (!strcmp(fn, "softmax_rows")) {
        entry = s_softmax_rows, shape = s_softmax_rows_output_shape;
    } else if (!strcmp(fn, "linear")) {
        entry = m_linear, shape = m_linear_output_shape;
    } else {
        fprintf(stderr, "unknown function %s\n", fn);
        return 1;
    }
    int n_inputs = (argc - 5) / 2;
    tfn_buffer inputs[8];
    for (int i = 0; i < n_inputs && i < 8; i++)
        if (read_input(argv[5 + 2 * i], argv[6 + 2 * i], &inputs[i])) return 1;

    tfn_buffer out;
    if (shape(inputs, 0, &out) != TFN_OK) {
        fprintf(stderr, "%s: %s\n", fn, tfn_rt_error_message());
        return 1;
    }
    out.data = malloc((size_t)(elements(&out) > 0 ? elements(&out) : 1) * sizeof(float));
    if (repeat < 1) repeat = 1;
    double *times = malloc((size_t)repeat * sizeof(double));
    for (int r = 0; r < repeat; r++) {
        double t0 = now_us();
        int status = entry(inputs, &out);
        double dt = now_us() - t0;
        if (status != TFN_OK) {
            fprintf(stderr, "%s: error %d: %s\n", fn, status, tfn_rt_error_message());
            return 1;
        }
        times[r] = dt;
    }
    if (repeat > 1) {
        /* The later calls' median and minimum (insertion sort: REPEAT is small). */
        double *rest = times + 1;
        int n = repeat - 1;
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && rest[j - 1] > rest[j]; j--) {
                double t = rest[j]; rest[j] = rest[j - 1]; rest[j - 1] = t;
            }
        fprintf(stderr, "%s: first call %.1f us, then median %.2f us, min %.2f us (%d calls)\n", fn,
                times[0], rest[n / 2], rest[0], n);
    }
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(out.data, sizeof(float), (size_t)elements(&out), f) != (size_t)elements(&out)) {
        fprintf(stderr, "cannot write %s\n", argv[4]);
        return 1;
    }
    fclose(f);
    printf("%s: output [", fn);
    for (int64_t a = 0; a < out.rank; a++) printf(a ? ", %lld" : "%lld", (long long)out.sizes[a]);
    printf("], first value %.9g\n", elements(&out) > 0 ? ((float *)out.data)[0] : 0.0f);
    return 0;
}
