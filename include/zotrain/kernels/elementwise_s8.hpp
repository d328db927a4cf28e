// Int8 ReLU and 2x2/2 max-pool (docs/design.md §5.3). The exponent passes through unchanged.
//   relu forward:  y = max(x, 0)                     (in place allowed: y may alias x)
//   relu backward: dx = x > 0 ? dy : 0               (x = forward input or output — the same
//                                                     test; dx may alias dy)
//   maxpool forward:  y[planes, h/2, w/2] = max of each window (odd h/w: last row/column
//                     dropped); backward: dx[planes, h, w] = 0 except at the first maximum of
//                     each window in scan order 00, 01, 10, 11, which gets dy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

// The functions below are exact selections and serve as the reference and the portable path;
// the _neon versions (ARM builds) give the same bytes. select_*(Isa) picks one per layer.

void relu_forward_s8(std::size_t n, const std::int8_t* x, std::int8_t* y);
void relu_backward_s8(std::size_t n, const std::int8_t* x, const std::int8_t* dy, std::int8_t* dx);
void maxpool2x2_forward_s8(int planes, int h, int w, const std::int8_t* x, std::int8_t* y);
void maxpool2x2_backward_s8(int planes, int h, int w, const std::int8_t* x,
                            const std::int8_t* dy, std::int8_t* dx);

// Max over points (PointNet's symmetric pool): x [batch, points, channels] → y [batch, channels];
// backward: dx = 0 except at the first maximal point of each (sample, channel), which gets dy.
void maxpool_points_forward_s8(int batch, int points, int channels, const std::int8_t* x,
                               std::int8_t* y);
void maxpool_points_backward_s8(int batch, int points, int channels, const std::int8_t* x,
                                const std::int8_t* dy, std::int8_t* dx);

using ReluForwardS8Fn = void (*)(std::size_t n, const std::int8_t* x, std::int8_t* y);
using ReluBackwardS8Fn = void (*)(std::size_t n, const std::int8_t* x, const std::int8_t* dy, std::int8_t* dx);
using MaxPool2x2ForwardS8Fn = void (*)(int planes, int h, int w, const std::int8_t* x, std::int8_t* y);
using MaxPool2x2BackwardS8Fn = void (*)(int planes, int h, int w, const std::int8_t* x, const std::int8_t* dy,
                                        std::int8_t* dx);
using MaxPoolPointsForwardS8Fn = void (*)(int batch, int points, int channels, const std::int8_t* x,
                                          std::int8_t* y);
using MaxPoolPointsBackwardS8Fn = void (*)(int batch, int points, int channels, const std::int8_t* x,
                                           const std::int8_t* dy, std::int8_t* dx);

void relu_forward_s8_neon(std::size_t n, const std::int8_t* x, std::int8_t* y);
void relu_backward_s8_neon(std::size_t n, const std::int8_t* x, const std::int8_t* dy, std::int8_t* dx);
void maxpool2x2_forward_s8_neon(int planes, int h, int w, const std::int8_t* x, std::int8_t* y);
void maxpool2x2_backward_s8_neon(int planes, int h, int w, const std::int8_t* x, const std::int8_t* dy,
                                 std::int8_t* dx);
void maxpool_points_forward_s8_neon(int batch, int points, int channels, const std::int8_t* x, std::int8_t* y);
void maxpool_points_backward_s8_neon(int batch, int points, int channels, const std::int8_t* x,
                                     const std::int8_t* dy, std::int8_t* dx);

// kReference and kPortable → the plain functions; kNeon and kNeonDot → _neon where built.
ReluForwardS8Fn select_relu_forward_s8(Isa isa);
ReluBackwardS8Fn select_relu_backward_s8(Isa isa);
MaxPool2x2ForwardS8Fn select_maxpool2x2_forward_s8(Isa isa);
MaxPool2x2BackwardS8Fn select_maxpool2x2_backward_s8(Isa isa);
MaxPoolPointsForwardS8Fn select_maxpool_points_forward_s8(Isa isa);
MaxPoolPointsBackwardS8Fn select_maxpool_points_backward_s8(Isa isa);

}  // namespace zt::kernels
