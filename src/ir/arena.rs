//! The arena: typed handles into a vector of nodes, as naga keeps its IR.

use super::*;

/// A typed index into an [`Arena`].
pub struct Handle<T> {
    index: u32,
    _marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    pub(super) fn new(index: usize) -> Handle<T> {
        Handle {
            index: index as u32,
            _marker: PhantomData,
        }
    }

    /// The position in the arena.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, o: &Self) -> bool {
        self.index == o.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> std::hash::Hash for Handle<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.index.hash(h)
    }
}
impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.index)
    }
}

/// A growable store of `T`, each with a span, addressed by [`Handle`].
#[derive(Clone, Debug)]
pub struct Arena<T> {
    items: Vec<T>,
    spans: Vec<Span>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            spans: Vec::new(),
        }
    }
}

impl<T> Arena<T> {
    /// Adds an item and returns its handle.
    pub fn append(&mut self, item: T, span: Span) -> Handle<T> {
        self.items.push(item);
        self.spans.push(span);
        Handle::new(self.items.len() - 1)
    }

    /// The span an item came from.
    pub fn span(&self, h: Handle<T>) -> Span {
        self.spans[h.index()]
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Items with their handles.
    pub fn iter(&self) -> impl Iterator<Item = (Handle<T>, &T)> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, t)| (Handle::new(i), t))
    }
}

impl<T> std::ops::Index<Handle<T>> for Arena<T> {
    type Output = T;
    fn index(&self, h: Handle<T>) -> &T {
        &self.items[h.index()]
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, h: Handle<T>) -> &mut T {
        &mut self.items[h.index()]
    }
}
