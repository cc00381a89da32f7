// Flat element index for 1-D work spread over a 2-D grid (x is capped at 65535
// workgroups on many devices).
#ifndef VKF_GRID_GLSL
#define VKF_GRID_GLSL
uint flat_index() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}
#endif
