package scheduler

import "container/heap"

// itemHeap is a heap of queued pods that knows each item's position, so
// items can be removed or re-sorted in place.
type itemHeap struct {
	items []*queued
	less  func(a, b *queued) bool
}

func (h *itemHeap) Len() int           { return len(h.items) }
func (h *itemHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *itemHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}
func (h *itemHeap) Push(x any) {
	it := x.(*queued)
	it.index = len(h.items)
	h.items = append(h.items, it)
}
func (h *itemHeap) Pop() any {
	n := len(h.items) - 1
	it := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	it.index = -1
	return it
}

func (h *itemHeap) push(it *queued)   { heap.Push(h, it) }
func (h *itemHeap) pop() *queued      { return heap.Pop(h).(*queued) }
func (h *itemHeap) peek() *queued     { return h.items[0] }
func (h *itemHeap) remove(it *queued) { heap.Remove(h, it.index) }
func (h *itemHeap) fix(it *queued)    { heap.Fix(h, it.index) }
