/* The hardware's ceiling for `total` (sum) and `saxpy` at sizes that live in L2/L3, written
 * by hand: what a perfect kernel of the same shape could reach on this machine, to compare
 * `tfnc bench` with (docs/benchmarks.md, "How far from the ceiling").
 *
 *   gcc -O3 -march=native -funroll-loops benches/cache_ceiling.c -o /tmp/cache_ceiling
 *   taskset -c 1 /tmp/cache_ceiling 262144
 *
 * Prints the median µs per call of: sum with 8 independent 128-bit accumulators (tfn's
 * inline order), sum with 4 × 512-bit accumulators, and saxpy (2.5x - 1.25z + 0.5) with
 * 128-bit and 512-bit vectors. Inputs are on huge pages (as NumPy's and tfnc bench's are). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static float sum_xmm8(const float *x, size_t n) {
    __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a0 = _mm_add_ps(a0, _mm_loadu_ps(x + i));
        a1 = _mm_add_ps(a1, _mm_loadu_ps(x + i + 4));
        a2 = _mm_add_ps(a2, _mm_loadu_ps(x + i + 8));
        a3 = _mm_add_ps(a3, _mm_loadu_ps(x + i + 12));
        a4 = _mm_add_ps(a4, _mm_loadu_ps(x + i + 16));
        a5 = _mm_add_ps(a5, _mm_loadu_ps(x + i + 20));
        a6 = _mm_add_ps(a6, _mm_loadu_ps(x + i + 24));
        a7 = _mm_add_ps(a7, _mm_loadu_ps(x + i + 28));
    }
    __m128 s = _mm_add_ps(_mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3)),
                          _mm_add_ps(_mm_add_ps(a4, a5), _mm_add_ps(a6, a7)));
    float r[4];
    _mm_storeu_ps(r, s);
    return r[0] + r[1] + r[2] + r[3];
}

__attribute__((noinline)) static float sum_zmm4(const float *x, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((noinline)) static void saxpy_xmm(const float *x, const float *z, float *o, size_t n) {
    const __m128 a = _mm_set1_ps(2.5f), b = _mm_set1_ps(-1.25f), c = _mm_set1_ps(0.5f);
    for (size_t i = 0; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, _mm_fmadd_ps(a, _mm_loadu_ps(x + i),
                                          _mm_fmadd_ps(b, _mm_loadu_ps(z + i), c)));
}

__attribute__((noinline)) static void saxpy_zmm(const float *x, const float *z, float *o, size_t n) {
    const __m512 a = _mm512_set1_ps(2.5f), b = _mm512_set1_ps(-1.25f), c = _mm512_set1_ps(0.5f);
    for (size_t i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(o + i, _mm512_fmadd_ps(a, _mm512_loadu_ps(x + i),
                                                _mm512_fmadd_ps(b, _mm512_loadu_ps(z + i), c)));
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *buffer(size_t n) {
    size_t bytes = (n * 4 + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    float *p = aligned_alloc(2u << 20, bytes);
    if (!p) exit(1);
    madvise(p, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i++) p[i] = (float)(i % 7) - 3.0f;
    return p;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : 262144;
    n -= n % 64;
    float *x = buffer(n), *z = buffer(n), *o = buffer(n);
    int reps = n >= (1u << 22) ? 400 : 4000;
    double *t = malloc(reps * sizeof *t);
    const char *names[] = {"sum, 8 x 128-bit", "sum, 4 x 512-bit", "saxpy, 128-bit", "saxpy, 512-bit"};
    volatile float sink = 0;
    for (int v = 0; v < 4; v++) {
        for (int k = 0; k < reps; k++) {
            double t0 = now();
            switch (v) {
            case 0: sink += sum_xmm8(x, n); break;
            case 1: sink += sum_zmm4(x, n); break;
            case 2: saxpy_xmm(x, z, o, n); break;
            default: saxpy_zmm(x, z, o, n); break;
            }
            t[k] = now() - t0;
        }
        qsort(t, reps, sizeof *t, cmp);
        double bytes = (v < 2 ? 4.0 : 12.0) * n;
        printf("%-18s n=%zu  median %8.1f us  %6.1f GB/s\n", names[v], n, t[reps / 2] * 1e6,
               bytes / t[reps / 2] / 1e9);
    }
    return 0;
}
