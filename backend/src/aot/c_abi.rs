//! The C ABI of AOT objects: the buffer struct, dtype and status codes, and the C declarations
//! every generated header starts with. The runtime (`tfn-rt`) implements the functions
//! declared here; `tfnc build` writes the declarations.

use std::ffi::c_void;
use tfn_ir::DType;

/// The largest rank a [`TfnBuffer`] holds.
pub const MAX_RANK: usize = 8;

/// Success.
pub const TFN_OK: i32 = 0;
/// An argument is wrong: a count, dtype, rank, size or stride, or a null pointer.
pub const TFN_ERR_ARGUMENT: i32 = 1;
/// The object cannot run here: a damaged descriptor, a runtime library of another version, or
/// a CPU without the features the object was compiled for.
pub const TFN_ERR_MODULE: i32 = 2;
/// The call failed while running (a size limit, an index out of range).
pub const TFN_ERR_RUN: i32 = 3;
/// A bug in tfn (the message says what).
pub const TFN_ERR_INTERNAL: i32 = 4;

/// A tensor argument or result: `data` points at element `[0, …, 0]`, `sizes` and `strides`
/// (in elements, non-negative) hold `rank` entries.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TfnBuffer {
    pub data: *mut c_void,
    pub dtype: i64,
    pub rank: i64,
    pub sizes: [i64; MAX_RANK],
    pub strides: [i64; MAX_RANK],
}

/// The C code of a dtype ([`TFN_DTYPES`]).
pub fn dtype_code(dtype: DType) -> i64 {
    match dtype {
        DType::F32 => 1,
        DType::F64 => 2,
        DType::I32 => 3,
        DType::I64 => 4,
        DType::Bool => 5,
        DType::I8 => 6,
        DType::U8 => 7,
        DType::F16 => 8,
        DType::BF16 => 9,
    }
}

/// The dtype of a C code.
pub fn dtype_of_code(code: i64) -> Option<DType> {
    DType::ALL.into_iter().find(|d| dtype_code(*d) == code)
}

/// The C names of the dtype codes, as the header defines them.
pub const TFN_DTYPES: &[(&str, DType)] = &[
    ("TFN_F32", DType::F32),
    ("TFN_F64", DType::F64),
    ("TFN_I32", DType::I32),
    ("TFN_I64", DType::I64),
    ("TFN_BOOL", DType::Bool),
    ("TFN_I8", DType::I8),
    ("TFN_U8", DType::U8),
    ("TFN_F16", DType::F16),
    ("TFN_BF16", DType::BF16),
];

/// The C types and codes of every generated header (guarded): the buffer struct, the dtype
/// and status codes, `tfn_buffer_row_major`.
pub const C_TYPES: &str = r#"#ifndef TFN_TYPES_H
#define TFN_TYPES_H
#include <stdint.h>

#define TFN_MAX_RANK 8

/* Dtype codes (tfn_buffer.dtype). */
#define TFN_F32 1
#define TFN_F64 2
#define TFN_I32 3
#define TFN_I64 4
#define TFN_BOOL 5
#define TFN_I8 6
#define TFN_U8 7
#define TFN_F16 8
#define TFN_BF16 9

/* Status codes of every call. */
#define TFN_OK 0
#define TFN_ERR_ARGUMENT 1 /* a count, dtype, rank, size or stride is wrong, or a null pointer */
#define TFN_ERR_MODULE 2   /* the object cannot run here (other runtime version, CPU lacks features) */
#define TFN_ERR_RUN 3      /* the call failed while running (size limit, index out of range) */
#define TFN_ERR_INTERNAL 4 /* a bug in tfn */

/* A tensor: data points at element [0, ..., 0]; sizes and strides (in elements, >= 0) have
   rank entries. Inputs are only read; outputs must not overlap each other or the inputs
   (a call whose buffers do returns TFN_ERR_ARGUMENT). */
typedef struct tfn_buffer {
    void *data;
    int64_t dtype;
    int64_t rank;
    int64_t sizes[TFN_MAX_RANK];
    int64_t strides[TFN_MAX_RANK];
} tfn_buffer;

/* Row-major strides for b->sizes[0 .. b->rank). */
static inline void tfn_buffer_row_major(tfn_buffer *b) {
    int64_t s = 1;
    for (int64_t a = b->rank - 1; a >= 0; a--) {
        b->strides[a] = s;
        s *= b->sizes[a];
    }
}
#endif
"#;

/// The C declarations of the runtime's ABI (guarded: every header of an object that runs with
/// the runtime library includes them, after [`C_TYPES`]).
pub const C_DECLARATIONS: &str = r#"#ifndef TFN_RT_H
#define TFN_RT_H
/* The message of the last failed call on this thread (valid until the next call). */
const char *tfn_rt_error_message(void);
/* Threads the kernels may use from now on (0: every core, the default). */
void tfn_rt_set_threads(int64_t threads);
/* The kernels' splits on the host program's parallel-for instead of the runtime's own pool
   (as Halide's do_par_for). parallel_for(user, count, max_threads, task, task_data) must call
   task(task_data, i) exactly once for every i in [0, count), from any threads, concurrently
   or not, and return when every call has returned; max_threads is how many threads the split
   was made for (the tfn_rt_set_threads count; count >= 2). A task never calls parallel_for
   again (a split inside a task runs on its thread) and never unwinds. Results are the same
   bits as on the runtime's pool. NULL: the runtime's pool again. Set it before calls start. */
typedef void (*tfn_task_fn)(void *task_data, int64_t index);
typedef void (*tfn_parallel_for_fn)(void *user, int64_t count, int64_t max_threads,
                                    tfn_task_fn task, void *task_data);
void tfn_rt_set_parallel_for(tfn_parallel_for_fn parallel_for, void *user);
/* Fills dtype, rank, sizes and row-major strides of output `output` of function `fn` of a
   module for these inputs (data is left alone). */
int tfn_rt_output_shape(const void *module, int64_t fn, const tfn_buffer *inputs,
                        int64_t n_inputs, int64_t output, tfn_buffer *out);
/* As tfn_rt_call, but allocates every output with malloc (the caller frees outputs[k].data
   with free) and fills its dtype, rank, sizes and row-major strides. On an error no output
   is left allocated. */
int tfn_rt_call_alloc(const void *module, int64_t fn, const tfn_buffer *inputs,
                      int64_t n_inputs, tfn_buffer *outputs, int64_t n_outputs);
/* What every entry point calls. */
int tfn_rt_call(const void *module, int64_t fn, const tfn_buffer *inputs, int64_t n_inputs,
                tfn_buffer *outputs, int64_t n_outputs);
#endif
"#;
