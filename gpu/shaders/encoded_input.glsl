// Where encode_input.comp puts group i (token t, group g: i = t * groups + g) of `total` groups
// in its buffer of 32-bit words (encoded_input_bytes on the host): first every group's 32 codes
// (8 words, four int8 to a word, the first lowest), then every group's scale (F32 bits), the
// sums of its two halves' codes (2 x F32) and its Q8_1 code-sum scale (F32).
uint encoded_codes_at(uint i) { return i * 8; }
uint encoded_scale_at(uint total, uint i) { return total * 8 + i; }
uint encoded_half_sums_at(uint total, uint i) { return total * 9 + 2 * i; }
uint encoded_code_sum_scale_at(uint total, uint i) { return total * 11 + i; }
