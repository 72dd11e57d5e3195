//! Part of the summary (types only): blocks of plain figures (counts and rates, not
//! distributions) declared once. One macro line per figure makes the block's field (its key
//! in `summary.json`) and its label for people; the console and any other output iterate
//! `FIGURES` and `values()` instead of copying the field list, as they iterate
//! `Metric::ALL` for the distributions. Only data: the collector fills the blocks.

/// One figure of a block: its key in `summary.json` and its label for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figure {
    /// The field's name, which is its key in `summary.json`.
    pub key: &'static str,
    /// What the console calls it.
    pub label: &'static str,
}

/// A figure's value as outputs show it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FigureValue {
    /// A count: always known, shown whole.
    Count(u64),
    /// A measured number; `None` when it cannot be computed (written `null`).
    Number(Option<f64>),
}

/// What a block's field can be.
pub trait AsFigure {
    /// The field as a `FigureValue`.
    fn figure(&self) -> FigureValue;
}

impl AsFigure for u64 {
    fn figure(&self) -> FigureValue {
        FigureValue::Count(*self)
    }
}

impl AsFigure for Option<f64> {
    fn figure(&self) -> FigureValue {
        FigureValue::Number(*self)
    }
}

/// A serde struct of figures, each declared as `/// doc` `field: Type => "label",`; its
/// `FIGURES` and `values()` list them in declaration order. Fields that are not figures (a
/// name, a distribution) follow in an optional `other { … }` group.
macro_rules! figure_block {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$doc:meta])* $field:ident: $ty:ty => $label:literal, )*
        }
        $( other { $( $(#[$odoc:meta])* $ofield:ident: $oty:ty, )* } )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            $( $(#[$doc])* pub $field: $ty, )*
            $( $( $(#[$odoc])* pub $ofield: $oty, )* )?
        }

        impl $name {
            /// Every figure of the block, in `summary.json`'s order.
            pub const FIGURES: [$crate::summary::figure::Figure; [$(stringify!($field)),*].len()] = [
                $( $crate::summary::figure::Figure { key: stringify!($field), label: $label }, )*
            ];

            /// Each figure's value, in `FIGURES`' order.
            pub fn values(&self) -> [$crate::summary::figure::FigureValue; [$(stringify!($field)),*].len()] {
                use $crate::summary::figure::AsFigure;
                [ $( self.$field.figure(), )* ]
            }
        }
    };
}

pub(crate) use figure_block;

#[cfg(test)]
mod tests {
    use super::*;

    figure_block! {
        /// A test block.
        pub struct Sample {
            /// A count.
            things: u64 => "Things:",
            /// A rate.
            things_per_s: Option<f64> => "Things per second:",
        }
        other {
            /// Not a figure.
            name: String,
        }
    }

    #[test]
    fn figures_follow_the_fields_and_their_serde_keys() {
        let s = Sample {
            things: 3,
            things_per_s: None,
            name: "x".into(),
        };
        let keys: Vec<&str> = Sample::FIGURES.iter().map(|f| f.key).collect();
        assert_eq!(keys, ["things", "things_per_s"]);
        assert_eq!(
            s.values(),
            [FigureValue::Count(3), FigureValue::Number(None)]
        );
        let v = serde_json::to_value(&s).unwrap();
        for f in Sample::FIGURES {
            assert!(v.get(f.key).is_some(), "{}", f.key);
        }
        assert_eq!(v["name"], "x");
    }
}
