// The last-workgroup pattern: a kernel whose final step needs every workgroup's results (split
// attention's combine, the mat-vec's post-norm) lets the last workgroup to finish do it, instead
// of a second dispatch behind a barrier. The includer declares
//   layout(...) coherent buffer ... { uint finish_counters[]; };  // zero between dispatches
// and writes the results the last one reads to coherent buffers.

shared uint finished_last_sh;  // 4 bytes of shared memory the host's budgets count (1: last)

// Whether this workgroup is the last of the `expected` counted on finish_counters[counter] to
// finish (every invocation's writes are made visible before it counts itself in): then every
// one's results are visible to it. The last resets the counter for the next dispatch. Called
// by every invocation of the workgroup.
bool finished_last(uint counter, uint expected) {
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0) {
        finished_last_sh = atomicAdd(finish_counters[counter], 1u) == expected - 1 ? 1u : 0u;
        if (finished_last_sh != 0) atomicExchange(finish_counters[counter], 0u);
    }
    barrier();
    memoryBarrierBuffer();
    return finished_last_sh != 0;
}
