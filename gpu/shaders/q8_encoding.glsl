// The CPU's Q8_0 encoding of a block of 32 input values whose largest magnitude is amax:
// code = round-to-nearest-even(v * (127 / amax)), scale = amax / 127 stored as F16. A code one
// step off costs a whole scale, large in a block holding an outlier, so the factor is the
// correctly rounded quotient the CPU computes, not the approximate one Vulkan's division allows.
float q8_code_factor(float amax) {
    if (amax == 0.0) return 0.0;
    const float q = 127.0 / amax;
    return fma(fma(-q, amax, 127.0), 1.0 / amax, q);  // one Newton step on the residual
}

float q8_scale(float amax) { return unpackHalf2x16(packHalf2x16(vec2(amax / 127.0, 0.0))).x; }
