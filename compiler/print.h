/* print.h — the IR's text form (.kir), used by --dump-after and friends. */
#ifndef KILN_PRINT_H
#define KILN_PRINT_H

#include "ir.h"

void ir_print(Buf *b, const Graph *g);

#endif
