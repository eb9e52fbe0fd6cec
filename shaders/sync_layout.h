/* The sync block of shaders/matvec.glsl POST, in 32-bit words from its start: read by that shader
 * (GLSL) and by runtime/vk_plan.c, which sizes the block (C), so both take these definitions.
 * Word 0 counts the workgroups (a norm) or the teams (an argmax) done; a norm's rsqrt factor is at
 * RLX_SYNC_RS; the lists start at RLX_SYNC_LISTS: a norm's sum of squares per workgroup, or an
 * argmax's count per team, then a (max, index) pair per workgroup and one per team, each list
 * 16-byte aligned. */
#ifndef RLX_SHADERS_SYNC_LAYOUT_H
#define RLX_SHADERS_SYNC_LAYOUT_H

#define RLX_SYNC_RS 32u
#define RLX_SYNC_LISTS 64u
/* workgroups whose maxima the last of them reduces, before the last team reduces the teams': no
 * workgroup walks every workgroup's pair */
#define RLX_SYNC_ARGMAX_TEAM 64u

#endif
