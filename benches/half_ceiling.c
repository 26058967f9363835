/* How fast a 16-bit (f16) elementwise kernel can be on this machine, by design, written by
 * hand: what separates tfn's widened kernels (docs/benchmarks.md, "16-bit kernels against
 * their ceiling") from the target of 0.9x f32's effective GB/s.
 *
 *   gcc -O2 -march=native benches/half_ceiling.c -o /tmp/half_ceiling
 *   taskset -c 1 /tmp/half_ceiling 262144 30      # elements, repetitions
 *
 * Prints the best µs per call of saxpy (2.5x - 1.25z + 0.5) over:
 *   - f32, 128-bit vectors (what a Cranelift kernel is);
 *   - f16 fused: one AVX-512 pass, `vcvtph2ps` at the loads, `vcvtps2ph` at the store (what
 *     a compiler with F16C and 512-bit vectors emits; Cranelift 0.135 has neither);
 *   - f16 blocked: tfn's design (`backend/src/executor/widened.rs`): per block, widen each
 *     input into an f32 scratch, run the 128-bit f32 kernel on the scratch, narrow its output,
 *     for blocks of 256, 1024 (tfn's) and 4096 elements;
 *   - f16 blocked with a software prefetch of the next block's inputs into L2.
 * Needs F16C and AVX-512F. Inputs and outputs are on huge pages, 16 bytes past a cache line
 * (as NumPy's arrays and `tfnc bench`'s are). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *alloc(size_t bytes) {
    void *p = mmap(0, bytes + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes + 64, MADV_HUGEPAGE);
    memset(p, 1, bytes + 64);
    return (char *)p + 16;
}

__attribute__((noinline)) static void saxpy_f32(const float *x, const float *z, float *o, size_t n) {
    const __m128 a = _mm_set1_ps(2.5f), b = _mm_set1_ps(-1.25f), c = _mm_set1_ps(0.5f);
    for (size_t i = 0; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, _mm_fmadd_ps(a, _mm_loadu_ps(x + i),
                                          _mm_fmadd_ps(b, _mm_loadu_ps(z + i), c)));
}

__attribute__((noinline)) static void saxpy_f16_fused(const unsigned short *x,
                                                      const unsigned short *z, unsigned short *o,
                                                      size_t n) {
    const __m512 a = _mm512_set1_ps(2.5f), b = _mm512_set1_ps(-1.25f), c = _mm512_set1_ps(0.5f);
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m512 xs = _mm512_cvtph_ps(_mm256_loadu_si256((const void *)(x + i)));
        __m512 zs = _mm512_cvtph_ps(_mm256_loadu_si256((const void *)(z + i)));
        __m512 r = _mm512_fmadd_ps(a, xs, _mm512_fmadd_ps(b, zs, c));
        _mm256_storeu_si256((void *)(o + i), _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
    }
}

__attribute__((noinline)) static void widen(const unsigned short *s, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const void *)(s + i))));
}

__attribute__((noinline)) static void narrow(const float *s, unsigned short *d, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        _mm256_storeu_si256((void *)(d + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
}

static float scratch[3][4096] __attribute__((aligned(64)));

/* `block` a multiple of 16 dividing n; `ahead`: blocks to prefetch ahead (0: none). */
__attribute__((noinline)) static void saxpy_f16_blocked(const unsigned short *x,
                                                        const unsigned short *z,
                                                        unsigned short *o, size_t n,
                                                        size_t block, size_t ahead) {
    for (size_t lo = 0; lo < n; lo += block) {
        if (ahead && lo + (ahead + 1) * block <= n)
            for (size_t j = 0; j < block; j += 32) {
                _mm_prefetch((const char *)(x + lo + ahead * block + j), _MM_HINT_T1);
                _mm_prefetch((const char *)(z + lo + ahead * block + j), _MM_HINT_T1);
            }
        widen(x + lo, scratch[0], block);
        widen(z + lo, scratch[1], block);
        saxpy_f32(scratch[0], scratch[1], scratch[2], block);
        narrow(scratch[2], o + lo, block);
    }
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : 262144;
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    if (n < 4096 || n % 4096 || reps < 1) {
        fprintf(stderr, "usage: %s ELEMENTS (a multiple of 4096) [REPETITIONS]\n", argv[0]);
        return 2;
    }
    float *x = alloc(4 * n), *z = alloc(4 * n), *o = alloc(4 * n);
    unsigned short *hx = alloc(2 * n), *hz = alloc(2 * n), *ho = alloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(i % 7);
        z[i] = (float)(i % 5);
        hx[i] = 0x3c00; /* 1.0 */
        hz[i] = 0x4000; /* 2.0 */
    }
#define TIME(name, call)                                                                       \
    do {                                                                                       \
        double best = 1e9;                                                                     \
        for (int r = 0; r < reps; r++) {                                                       \
            double t = now();                                                                  \
            call;                                                                              \
            t = now() - t;                                                                     \
            if (t < best) best = t;                                                            \
        }                                                                                      \
        printf("%-28s n=%-9zu best %9.1f us\n", name, n, best * 1e6);                          \
    } while (0)
    TIME("f32, 128-bit", saxpy_f32(x, z, o, n));
    TIME("f16 fused, 512-bit", saxpy_f16_fused(hx, hz, ho, n));
    TIME("f16 blocked 256", saxpy_f16_blocked(hx, hz, ho, n, 256, 0));
    TIME("f16 blocked 1024 (tfn's)", saxpy_f16_blocked(hx, hz, ho, n, 1024, 0));
    TIME("f16 blocked 4096", saxpy_f16_blocked(hx, hz, ho, n, 4096, 0));
    TIME("f16 blocked 1024, prefetch", saxpy_f16_blocked(hx, hz, ho, n, 1024, 2));
    /* The results, so no call is optimised away: 2.5 - 2.5 + 0.5 = 0.5 (0x3800). */
    if (ho[n - 1] != 0x3800) {
        fprintf(stderr, "wrong result %#x\n", ho[n - 1]);
        return 1;
    }
    return 0;
}
