//! `/v1/users/me`: who the caller is.

use axum::extract::State;

use crate::auth::extract::AnyCaller;
use crate::envelope::Data;
use crate::users::{self, User};
use crate::{ApiError, AppState};

pub async fn me(State(state): State<AppState>, AnyCaller(caller): AnyCaller) -> Result<Data<User>, ApiError> {
    users::find(&state.db, caller.user_id)
        .await?
        .map(Data::new)
        .ok_or_else(|| ApiError::Unauthorized("the token's user does not exist".into()))
}
