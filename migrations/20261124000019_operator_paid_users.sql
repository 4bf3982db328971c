-- How many users' on-chain accounts (user record, deposit and vault token accounts: 5,700,240
-- lamports of rent) the operator paid for, per UTC day, against FM_OPERATOR_NEW_USERS_PER_DAY.
CREATE TABLE operator_paid_users (
    day   DATE PRIMARY KEY,
    users INT NOT NULL CHECK (users >= 0)
);
