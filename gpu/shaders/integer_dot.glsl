// OpSDot of SPV_KHR_integer_dot_product on two words of four signed bytes (packed format 0):
// glslang 11 has no GL_EXT_integer_dot_product, so the instruction is declared by its id. The
// including shader enables GL_EXT_spirv_intrinsics.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot_i8x4(uint a, uint b, spirv_literal int packed_vector_format);
