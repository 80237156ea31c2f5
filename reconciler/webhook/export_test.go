package webhook

// Len is the number of repositories h holds a hook for.
func (h *Hooks) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.hooks)
}
