/* The message file of file-sending variants: messages 0..N-1 back to back (message_file.c). */
#ifndef COPYLAB_MESSAGE_FILE_H
#define COPYLAB_MESSAGE_FILE_H

#include <stdint.h>

#define MESSAGE_FILE_MIN_BYTES (256ULL << 20)
/* N: enough messages for 256 MiB and at least 8, so a window never wraps cheaply. */
uint64_t message_file_messages(uint64_t size);
/* Creates the file with the pattern unless it already holds N messages of size bytes,
 * then reads it once, so that its pages are in memory before any window. */
void message_file_prepare(const char *path, uint64_t size);
/* Opens a prepared message file for reading; dies naming it when it cannot. */
int message_file_open(const char *path);
/* The stream position where message seq starts in the file: messages repeat every N. */
uint64_t message_file_offset(uint64_t seq, uint64_t size);

#endif
