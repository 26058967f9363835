/* A C client of the char-LM's forward (examples/char_lm/model.tfn's `gpt`: token and position
 * embeddings, L pre-layer-norm transformer blocks in a `for` loop over stacked weights, the
 * tied output projection), built ahead of time by `tfnc build` (see docs/aot.md and
 * examples/aot_c/char_lm.sh, which builds the module `lm` and this program):
 *
 *   examples/aot_c/char_lm.sh build
 *
 * Usage: char_lm THREADS REPEAT DIR B T C V L
 *   Reads DIR/tokens.bin (B*T little-endian i64 symbols in [0, V)) and each weight as raw
 *   little-endian f32 from DIR/NAME.bin, NAME and shape as in model.tfn's header: wte [V, C],
 *   wpe [T, C], ln1_g ln1_b [L, C], wq wk wv wo [L, C, C], bo [L, C], ln2_g ln2_b [L, C],
 *   w1 [L, C, 4C], b1 [L, 4C], w2 [L, 4C, C], b2 [L, C], lnf_g lnf_b [C]. Writes the logits
 *   [B, T, V] to DIR/logits.bin (raw f32) and prints their shape. REPEAT > 1 times the calls
 *   on stderr. Exit code 0 on success, 1 on any error (message on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm.h"

#define N_INPUTS 19

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

/* Reads DIR/NAME.bin into b, a row-major tensor of `dtype` and the `rank` sizes given. */
static int read_tensor(const char *dir, const char *name, int64_t dtype, size_t elem, int rank,
                       const int64_t *sizes, tfn_buffer *b) {
    memset(b, 0, sizeof *b);
    b->dtype = dtype;
    b->rank = rank;
    for (int a = 0; a < rank; a++) b->sizes[a] = sizes[a];
    tfn_buffer_row_major(b);
    size_t n = (size_t)elements(b);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    b->data = malloc((n > 0 ? n : 1) * elem);
    FILE *f = fopen(path, "rb");
    if (!f || !b->data) return fprintf(stderr, "cannot read %s\n", path), 1;
    size_t got = fread(b->data, elem, n, f);
    fclose(f);
    if (got != n) return fprintf(stderr, "%s: expected %zu elements\n", path, n), 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s THREADS REPEAT DIR B T C V L\n", argv[0]);
        return 1;
    }
    tfn_rt_set_threads(atoll(argv[1]));
    int repeat = atoi(argv[2]);
    const char *dir = argv[3];
    int64_t B = atoll(argv[4]), T = atoll(argv[5]), C = atoll(argv[6]), V = atoll(argv[7]),
            L = atoll(argv[8]);
    /* The parameters of `gpt`, in order (inputs[1], `key`, is dropout's: unused at p = 0). */
    struct { const char *name; int rank; int64_t sizes[3]; } w[N_INPUTS] = {
        {"tokens", 2, {B, T}}, {"key", 1, {2}},
        {"wte", 2, {V, C}}, {"wpe", 2, {T, C}},
        {"ln1_g", 2, {L, C}}, {"ln1_b", 2, {L, C}},
        {"wq", 3, {L, C, C}}, {"wk", 3, {L, C, C}}, {"wv", 3, {L, C, C}}, {"wo", 3, {L, C, C}},
        {"bo", 2, {L, C}}, {"ln2_g", 2, {L, C}}, {"ln2_b", 2, {L, C}},
        {"w1", 3, {L, C, 4 * C}}, {"b1", 2, {L, 4 * C}},
        {"w2", 3, {L, 4 * C, C}}, {"b2", 2, {L, C}},
        {"lnf_g", 1, {C}}, {"lnf_b", 1, {C}},
    };
    tfn_buffer inputs[N_INPUTS];
    if (read_tensor(dir, "tokens", TFN_I64, sizeof(int64_t), 2, w[0].sizes, &inputs[0])) return 1;
    int64_t key[2] = {0, 0};
    memset(&inputs[1], 0, sizeof inputs[1]);
    inputs[1].data = key, inputs[1].dtype = TFN_I64, inputs[1].rank = 1, inputs[1].sizes[0] = 2;
    tfn_buffer_row_major(&inputs[1]);
    for (int i = 2; i < N_INPUTS; i++)
        if (read_tensor(dir, w[i].name, TFN_F32, sizeof(float), w[i].rank, w[i].sizes, &inputs[i]))
            return 1;

    if (repeat < 1) repeat = 1;
    tfn_buffer logits;
    double first = 0, best = 1e300;
    for (int r = 0; r < repeat; r++) {
        /* The allocating variant: the runtime sizes the output and mallocs it. */
        double t0 = now_us();
        int status = lm_gpt_alloc(inputs, &logits);
        double dt = now_us() - t0;
        if (status != TFN_OK) {
            fprintf(stderr, "gpt: error %d: %s\n", status, tfn_rt_error_message());
            return 1;
        }
        if (r == 0) first = dt;
        else if (dt < best) best = dt;
        if (r + 1 < repeat) free(logits.data);
    }
    if (repeat > 1)
        fprintf(stderr, "gpt: first call %.1f us, then min %.1f us (%d calls)\n", first, best,
                repeat - 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    FILE *f = fopen(path, "wb");
    size_t n = (size_t)elements(&logits);
    if (!f || fwrite(logits.data, sizeof(float), n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    fclose(f);
    printf("gpt: logits [%lld, %lld, %lld], first value %.9g\n", (long long)logits.sizes[0],
           (long long)logits.sizes[1], (long long)logits.sizes[2],
           n > 0 ? ((float *)logits.data)[0] : 0.0f);
    free(logits.data);
    for (int i = 0; i < N_INPUTS; i++)
        if (i != 1) free(inputs[i].data);
    return 0;
}
