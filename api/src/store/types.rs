//! The domain's enums as Postgres TEXT columns (`CHECK`-constrained to the same spellings),
//! so rows decode straight into `Side` and `MarketStatus` and an unknown spelling is an error,
//! never a silent default.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::{Decode, Encode, Postgres, Type};

use crate::domain::market::{MarketStatus, Side};

macro_rules! text_enum {
    ($ty:ty, $what:literal) => {
        impl Type<Postgres> for $ty {
            fn type_info() -> PgTypeInfo {
                <&str as Type<Postgres>>::type_info()
            }

            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, Postgres> for $ty {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <&str as Decode<Postgres>>::decode(value)?;
                <$ty>::parse(text).ok_or_else(|| format!(concat!("unknown ", $what, " {:?}"), text).into())
            }
        }

        impl Encode<'_, Postgres> for $ty {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode_by_ref(&self.as_str(), buf)
            }
        }
    };
}

text_enum!(Side, "side");
text_enum!(MarketStatus, "market status");
