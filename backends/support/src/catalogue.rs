//! A backend's built-in kernels as a list in a fixed order with an index by
//! name: what `module_get_builtin`'s `get_function` looks up, and what
//! tests and listings walk.
use std::collections::HashMap;

/// Items in a fixed order, found by name.
pub struct Catalogue<T> {
    list: Vec<T>,
    by_name: HashMap<String, usize>,
}

impl<T> Catalogue<T> {
    /// The catalogue of `list`, each item named by `name`; a later item of
    /// a name already taken is found by `iter` only.
    pub fn new(list: Vec<T>, name: impl Fn(&T) -> &str) -> Self {
        let mut by_name = HashMap::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            by_name.entry(name(item).to_string()).or_insert(i);
        }
        Catalogue { list, by_name }
    }

    /// The item called `name`, if there is one.
    pub fn find(&self, name: &str) -> Option<&T> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }

    /// Every item, in the order given.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::Catalogue;

    #[test]
    fn items_are_found_by_name_and_listed_in_order() {
        let catalogue = Catalogue::new(vec!["fill_f32", "add_f32", "fill_f32"], |s| s);
        assert!(std::ptr::eq(catalogue.find("fill_f32").unwrap(), &catalogue.iter().as_slice()[0]));
        assert_eq!(catalogue.find("add_f32"), Some(&"add_f32"));
        assert_eq!(catalogue.find("sum_f32"), None);
        assert_eq!(catalogue.iter().copied().collect::<Vec<_>>(), ["fill_f32", "add_f32", "fill_f32"]);
    }
}
