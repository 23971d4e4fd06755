"""Hidden checks of stage A4, one module per task: conv1d (4.1), conv2d (4.2), pooling
(4.3), softmax / log-softmax / dropout (4.4) and the text CNN (4.5); `common` holds the
convolutions' shared tolerance and labels.

Tensors live on the simple backend, which runs the student's A4 kernels (im2col/col2im,
the pooling loops) as plain Python — the code between their fences, as written — and the
rest through the tensor operations of earlier stages. Every function is checked forward and
backward (a random upstream gradient) against the reference, on contiguous and permuted
(strided) inputs; the kernels are also called directly on raw storages (a permuted input,
an output buffer full of garbage that they must overwrite); convolution, pooling and the
softmax family are also checked against central differences of the student's own forward.
Dropout is random: its checks are properties (identity when not training, the p = 0 and
p = 1 edge cases, survivors scaled by 1/(1 − p), a drop rate near p, the gradient through
the same mask, repeatable under `manual_seed`).
"""
