/**
 * Program IDL in camelCase format in order to be used in JS/TS.
 *
 * Note that this is only a type helper and is not the actual IDL. The original
 * IDL can be found at `idl/funding_market.json`.
 */
export type FundingMarket = {
  "accounts": [
    {
      "discriminator": [
        155,
        12,
        170,
        224,
        30,
        250,
        204,
        130
      ],
      "name": "config"
    },
    {
      "discriminator": [
        219,
        190,
        213,
        55,
        0,
        227,
        198,
        154
      ],
      "name": "market"
    },
    {
      "discriminator": [
        170,
        188,
        143,
        228,
        122,
        64,
        247,
        208
      ],
      "name": "position"
    },
    {
      "discriminator": [
        211,
        33,
        136,
        16,
        186,
        110,
        242,
        127
      ],
      "name": "userAccount"
    }
  ],
  "address": "98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J",
  "errors": [
    {
      "code": 6000,
      "msg": "fee above 100 %",
      "name": "feeTooHigh"
    },
    {
      "code": 6001,
      "msg": "minimum amounts must be positive",
      "name": "zeroMinimum"
    },
    {
      "code": 6002,
      "msg": "signer is neither the wallet nor the operator",
      "name": "notWalletOrOperator"
    },
    {
      "code": 6003,
      "msg": "signer is not the config authority",
      "name": "notAuthority"
    },
    {
      "code": 6004,
      "msg": "signer is not the oracle",
      "name": "notOracle"
    },
    {
      "code": 6005,
      "msg": "open < close <= settlement - 300 s is required",
      "name": "invalidSchedule"
    },
    {
      "code": 6006,
      "msg": "trading has not opened yet",
      "name": "marketNotOpen"
    },
    {
      "code": 6007,
      "msg": "market is not open for trading",
      "name": "marketClosed"
    },
    {
      "code": 6008,
      "msg": "amount below the minimum trade",
      "name": "tradeTooSmall"
    },
    {
      "code": 6009,
      "msg": "amount must be positive",
      "name": "zeroAmount"
    },
    {
      "code": 6010,
      "msg": "slippage bound violated",
      "name": "slippageExceeded"
    },
    {
      "code": 6011,
      "msg": "not enough USDC in the vault",
      "name": "insufficientBalance"
    },
    {
      "code": 6012,
      "msg": "not enough shares in the position",
      "name": "insufficientShares"
    },
    {
      "code": 6013,
      "msg": "deposit below the minimum",
      "name": "belowMinimumDeposit"
    },
    {
      "code": 6014,
      "msg": "settlement time not reached",
      "name": "tooEarly"
    },
    {
      "code": 6015,
      "msg": "market already resolved or voided",
      "name": "alreadyFinalized"
    },
    {
      "code": 6016,
      "msg": "market not resolved or voided yet",
      "name": "notFinalized"
    },
    {
      "code": 6017,
      "msg": "positions remain unsettled",
      "name": "positionsOpen"
    },
    {
      "code": 6018,
      "msg": "market vault would not cover the shares outstanding",
      "name": "insolvent"
    },
    {
      "code": 6019,
      "msg": "the trade buys no shares",
      "name": "noShares"
    },
    {
      "code": 6020,
      "msg": "LMSR: liquidity outside the domain",
      "name": "liquidityOutOfRange"
    },
    {
      "code": 6021,
      "msg": "LMSR: quantity outside the domain",
      "name": "quantityOutOfRange"
    },
    {
      "code": 6022,
      "msg": "LMSR: the trade would push the price outside the market's range",
      "name": "priceOutOfDomain"
    },
    {
      "code": 6023,
      "msg": "LMSR: amount outside the domain",
      "name": "amountOutOfRange"
    },
    {
      "code": 6024,
      "msg": "LMSR: prior outside (0, 1)",
      "name": "priorOutOfRange"
    },
    {
      "code": 6025,
      "msg": "arithmetic overflow",
      "name": "overflow"
    },
    {
      "code": 6026,
      "msg": "initialize must be signed by the program's upgrade authority",
      "name": "notUpgradeAuthority"
    }
  ],
  "events": [
    {
      "discriminator": [
        55,
        231,
        159,
        160,
        239,
        83,
        141,
        95
      ],
      "name": "depositSwept"
    },
    {
      "discriminator": [
        86,
        91,
        119,
        43,
        94,
        0,
        217,
        113
      ],
      "name": "marketClosed"
    },
    {
      "discriminator": [
        88,
        184,
        130,
        231,
        226,
        84,
        6,
        58
      ],
      "name": "marketCreated"
    },
    {
      "discriminator": [
        83,
        62,
        66,
        204,
        37,
        76,
        234,
        179
      ],
      "name": "marketFinalized"
    },
    {
      "discriminator": [
        75,
        100,
        92,
        189,
        245,
        116,
        252,
        221
      ],
      "name": "positionSettled"
    },
    {
      "discriminator": [
        41,
        110,
        64,
        129,
        60,
        79,
        179,
        80
      ],
      "name": "tradeExecuted"
    },
    {
      "discriminator": [
        145,
        177,
        42,
        214,
        0,
        65,
        40,
        69
      ],
      "name": "userCreated"
    },
    {
      "discriminator": [
        20,
        89,
        223,
        198,
        194,
        124,
        219,
        13
      ],
      "name": "withdrawn"
    }
  ],
  "instructions": [
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          }
        },
        {
          "name": "userVault",
          "writable": true
        },
        {
          "name": "position",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  112,
                  111,
                  115,
                  105,
                  116,
                  105,
                  111,
                  110
                ]
              },
              {
                "kind": "account",
                "path": "market"
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "docs": [
            "The wallet, or the operator acting for it; pays a new position's rent."
          ],
          "name": "signer",
          "signer": true,
          "writable": true
        },
        {
          "address": "11111111111111111111111111111111",
          "name": "systemProgram"
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [
        {
          "name": "side",
          "type": {
            "defined": {
              "name": "side"
            }
          }
        },
        {
          "name": "usdcAmount",
          "type": "u64"
        },
        {
          "name": "minShares",
          "type": "u64"
        }
      ],
      "discriminator": [
        40,
        239,
        138,
        154,
        8,
        37,
        106,
        108
      ],
      "docs": [
        "Spends `usdc_amount` (+ fee) micro-USDC on `side`; at least `min_shares` micro-shares."
      ],
      "name": "buyShares"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "authority",
          "relations": [
            "config"
          ],
          "signer": true,
          "writable": true
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "treasury",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        88,
        154,
        248,
        186,
        48,
        14,
        123,
        244
      ],
      "docs": [
        "Returns a finished market's remaining USDC to the treasury and closes its accounts."
      ],
      "name": "closeMarket"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "authority",
          "relations": [
            "config"
          ],
          "signer": true
        },
        {
          "name": "payer",
          "signer": true,
          "writable": true
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "kind": "arg",
                "path": "params.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "vault",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116,
                  95,
                  118,
                  97,
                  117,
                  108,
                  116
                ]
              },
              {
                "kind": "account",
                "path": "market"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "treasury",
          "writable": true
        },
        {
          "name": "usdcMint"
        },
        {
          "address": "11111111111111111111111111111111",
          "name": "systemProgram"
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [
        {
          "name": "params",
          "type": {
            "defined": {
              "name": "createMarketParams"
            }
          }
        }
      ],
      "discriminator": [
        103,
        226,
        97,
        235,
        200,
        188,
        251,
        254
      ],
      "docs": [
        "Creates a market, funded from the treasury; the config authority must sign."
      ],
      "name": "createMarket"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "wallet"
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "kind": "account",
                "path": "wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "deposit",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  100,
                  101,
                  112,
                  111,
                  115,
                  105,
                  116
                ]
              },
              {
                "kind": "account",
                "path": "wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "vault",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  118,
                  97,
                  117,
                  108,
                  116
                ]
              },
              {
                "kind": "account",
                "path": "wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "usdcMint"
        },
        {
          "name": "payer",
          "signer": true,
          "writable": true
        },
        {
          "address": "11111111111111111111111111111111",
          "name": "systemProgram"
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        108,
        227,
        130,
        130,
        252,
        109,
        75,
        218
      ],
      "docs": [
        "Creates a trader's account with its deposit and vault token accounts. Anyone may pay."
      ],
      "name": "createUser"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          },
          "writable": true
        },
        {
          "name": "treasury",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  116,
                  114,
                  101,
                  97,
                  115,
                  117,
                  114,
                  121
                ]
              }
            ]
          },
          "writable": true
        },
        {
          "name": "usdcMint"
        },
        {
          "name": "payer",
          "signer": true,
          "writable": true
        },
        {
          "name": "upgradeAuthority",
          "signer": true
        },
        {
          "name": "programData",
          "pda": {
            "program": {
              "kind": "const",
              "value": [
                2,
                168,
                246,
                145,
                78,
                136,
                161,
                176,
                226,
                16,
                21,
                62,
                247,
                99,
                174,
                43,
                0,
                194,
                185,
                61,
                22,
                193,
                36,
                210,
                192,
                83,
                122,
                16,
                4,
                128,
                0,
                0
              ]
            },
            "seeds": [
              {
                "kind": "const",
                "value": [
                  120,
                  211,
                  125,
                  136,
                  166,
                  41,
                  34,
                  3,
                  81,
                  163,
                  223,
                  10,
                  61,
                  12,
                  105,
                  199,
                  137,
                  177,
                  145,
                  114,
                  18,
                  135,
                  247,
                  65,
                  205,
                  249,
                  205,
                  171,
                  0,
                  184,
                  172,
                  193
                ]
              }
            ]
          }
        },
        {
          "address": "11111111111111111111111111111111",
          "name": "systemProgram"
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        }
      ],
      "args": [
        {
          "name": "params",
          "type": {
            "defined": {
              "name": "initializeParams"
            }
          }
        }
      ],
      "discriminator": [
        175,
        175,
        109,
        31,
        13,
        152,
        155,
        237
      ],
      "docs": [
        "Creates the singleton `Config` and the treasury token account. Once, signed by the",
        "program's upgrade authority."
      ],
      "name": "initialize"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "oracle",
          "relations": [
            "config"
          ],
          "signer": true
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "treasury",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [
        {
          "name": "actualRate",
          "type": "i64"
        }
      ],
      "discriminator": [
        155,
        23,
        80,
        173,
        46,
        74,
        23,
        239
      ],
      "docs": [
        "The oracle records the settled rate (1e-12 units); YES wins iff it is positive."
      ],
      "name": "resolveMarket"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          }
        },
        {
          "name": "userVault",
          "writable": true
        },
        {
          "name": "position",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  112,
                  111,
                  115,
                  105,
                  116,
                  105,
                  111,
                  110
                ]
              },
              {
                "kind": "account",
                "path": "market"
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "signer",
          "signer": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [
        {
          "name": "side",
          "type": {
            "defined": {
              "name": "side"
            }
          }
        },
        {
          "name": "shares",
          "type": "u64"
        },
        {
          "name": "minUsdcOut",
          "type": "u64"
        }
      ],
      "discriminator": [
        184,
        164,
        169,
        16,
        231,
        158,
        199,
        196
      ],
      "docs": [
        "Sells `shares` micro-shares of `side`; at least `min_usdc_out` micro-USDC after the fee."
      ],
      "name": "sellShares"
    },
    {
      "accounts": [
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "position",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  112,
                  111,
                  115,
                  105,
                  116,
                  105,
                  111,
                  110
                ]
              },
              {
                "kind": "account",
                "path": "market"
              },
              {
                "account": "position",
                "kind": "account",
                "path": "position.wallet"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "account": "position",
                "kind": "account",
                "path": "position.wallet"
              }
            ]
          }
        },
        {
          "name": "userVault",
          "writable": true
        },
        {
          "name": "rentReceiver",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        33,
        156,
        74,
        218,
        215,
        42,
        112,
        175
      ],
      "docs": [
        "Pays a position out into its owner's vault and closes it. Permissionless."
      ],
      "name": "settlePosition"
    },
    {
      "accounts": [
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        43,
        66,
        200,
        216,
        219,
        186,
        44,
        87
      ],
      "docs": [
        "Pays out and closes many positions of one market: `(position, owner's vault, rent",
        "receiver)` triples in the remaining accounts. Permissionless."
      ],
      "name": "settlePositions"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          }
        },
        {
          "name": "deposit",
          "writable": true
        },
        {
          "name": "vault",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        224,
        194,
        238,
        57,
        190,
        119,
        255,
        234
      ],
      "docs": [
        "Moves the deposit account's USDC into the vault once it reaches `min_deposit`."
      ],
      "name": "sweepDeposit"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "oracle",
          "relations": [
            "config"
          ],
          "signer": true
        },
        {
          "name": "market",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  109,
                  97,
                  114,
                  107,
                  101,
                  116
                ]
              },
              {
                "account": "market",
                "kind": "account",
                "path": "market.market_id"
              }
            ]
          },
          "writable": true
        },
        {
          "name": "marketVault",
          "writable": true
        },
        {
          "name": "treasury",
          "writable": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [],
      "discriminator": [
        243,
        175,
        46,
        124,
        95,
        101,
        39,
        69
      ],
      "docs": [
        "The oracle voids the market; every position is refunded."
      ],
      "name": "voidMarket"
    },
    {
      "accounts": [
        {
          "name": "config",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  99,
                  111,
                  110,
                  102,
                  105,
                  103
                ]
              }
            ]
          }
        },
        {
          "name": "user",
          "pda": {
            "seeds": [
              {
                "kind": "const",
                "value": [
                  117,
                  115,
                  101,
                  114
                ]
              },
              {
                "account": "userAccount",
                "kind": "account",
                "path": "user.wallet"
              }
            ]
          }
        },
        {
          "name": "vault",
          "writable": true
        },
        {
          "name": "destination",
          "writable": true
        },
        {
          "name": "signer",
          "signer": true
        },
        {
          "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
          "name": "tokenProgram"
        },
        {
          "name": "eventAuthority"
        },
        {
          "name": "program"
        }
      ],
      "args": [
        {
          "name": "amount",
          "type": "u64"
        }
      ],
      "discriminator": [
        183,
        18,
        70,
        156,
        148,
        109,
        161,
        34
      ],
      "docs": [
        "Sends `amount` micro-USDC from the user's vault to a USDC token account."
      ],
      "name": "withdraw"
    }
  ],
  "metadata": {
    "description": "Anchor program: funding-rate prediction markets with an LMSR market maker",
    "name": "fundingMarket",
    "spec": "0.1.0",
    "version": "0.1.0"
  },
  "types": [
    {
      "docs": [
        "The program's singleton configuration, PDA `[\"config\"]`."
      ],
      "name": "config",
      "type": {
        "fields": [
          {
            "docs": [
              "Co-signs every `create_market` (the service's key)."
            ],
            "name": "authority",
            "type": "pubkey"
          },
          {
            "docs": [
              "Acts for users in custodial trades and withdrawals."
            ],
            "name": "operator",
            "type": "pubkey"
          },
          {
            "docs": [
              "Resolves and voids markets."
            ],
            "name": "oracle",
            "type": "pubkey"
          },
          {
            "docs": [
              "The USDC mint (6 decimals)."
            ],
            "name": "usdcMint",
            "type": "pubkey"
          },
          {
            "docs": [
              "Token account owned by this config: receives fees, funds market subsidies."
            ],
            "name": "treasury",
            "type": "pubkey"
          },
          {
            "docs": [
              "Trading fee in basis points (100 = 1 %), charged on top of the amount."
            ],
            "name": "feeBps",
            "type": "u16"
          },
          {
            "docs": [
              "Smallest deposit swept into a user's vault, micro-USDC (1_000_000 = 1 USDC)."
            ],
            "name": "minDeposit",
            "type": "u64"
          },
          {
            "docs": [
              "Smallest trade, micro-USDC (1_000_000 = 1 USDC)."
            ],
            "name": "minTrade",
            "type": "u64"
          },
          {
            "name": "bump",
            "type": "u8"
          },
          {
            "name": "treasuryBump",
            "type": "u8"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "createMarketParams",
      "type": {
        "fields": [
          {
            "docs": [
              "The service's UUID of the market."
            ],
            "name": "marketId",
            "type": {
              "array": [
                "u8",
                16
              ]
            }
          },
          {
            "docs": [
              "Series slug, zero-padded UTF-8."
            ],
            "name": "series",
            "type": {
              "array": [
                "u8",
                32
              ]
            }
          },
          {
            "name": "openTs",
            "type": "i64"
          },
          {
            "name": "closeTs",
            "type": "i64"
          },
          {
            "name": "settlementTs",
            "type": "i64"
          },
          {
            "docs": [
              "LMSR liquidity, micro-USDC."
            ],
            "name": "b",
            "type": "u64"
          },
          {
            "docs": [
              "Opening probability of YES in millionths (clamped to [0.02, 0.98])."
            ],
            "name": "priorPpm",
            "type": "u32"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "depositSwept",
      "type": {
        "fields": [
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "docs": [
              "Swept, micro-USDC."
            ],
            "name": "amount",
            "type": "u64"
          },
          {
            "docs": [
              "The vault after the sweep, micro-USDC."
            ],
            "name": "vaultBalance",
            "type": "u64"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "initializeParams",
      "type": {
        "fields": [
          {
            "name": "authority",
            "type": "pubkey"
          },
          {
            "name": "operator",
            "type": "pubkey"
          },
          {
            "name": "oracle",
            "type": "pubkey"
          },
          {
            "docs": [
              "Basis points; at most 10_000."
            ],
            "name": "feeBps",
            "type": "u16"
          },
          {
            "docs": [
              "Micro-USDC."
            ],
            "name": "minDeposit",
            "type": "u64"
          },
          {
            "docs": [
              "Micro-USDC."
            ],
            "name": "minTrade",
            "type": "u64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "docs": [
        "One round: is the funding rate positive at `settlement_ts`? PDA `[\"market\", market_id]`.",
        "Its USDC (subsidy, traders' payments, fees until resolution) sits in `vault`, a token",
        "account at PDA `[\"market_vault\", market]` whose authority is this account."
      ],
      "name": "market",
      "type": {
        "fields": [
          {
            "docs": [
              "The service's UUID of the market (16 bytes)."
            ],
            "name": "marketId",
            "type": {
              "array": [
                "u8",
                16
              ]
            }
          },
          {
            "docs": [
              "The series slug (`{exchange}-{symbol}`), UTF-8, zero-padded."
            ],
            "name": "series",
            "type": {
              "array": [
                "u8",
                32
              ]
            }
          },
          {
            "name": "vault",
            "type": "pubkey"
          },
          {
            "docs": [
              "Trading opens (Unix s)."
            ],
            "name": "openTs",
            "type": "i64"
          },
          {
            "docs": [
              "Trading stops (Unix s): at least 5 minutes before settlement."
            ],
            "name": "closeTs",
            "type": "i64"
          },
          {
            "docs": [
              "The funding settlement the question is about (Unix s)."
            ],
            "name": "settlementTs",
            "type": "i64"
          },
          {
            "docs": [
              "LMSR liquidity b, micro-USDC."
            ],
            "name": "b",
            "type": "u64"
          },
          {
            "docs": [
              "LMSR outstanding quantities, micro-shares, including the opening offset."
            ],
            "name": "qYes",
            "type": "u64"
          },
          {
            "name": "qNo",
            "type": "u64"
          },
          {
            "docs": [
              "Shares held by traders, micro-shares (= q minus the opening offset)."
            ],
            "name": "soldYes",
            "type": "u64"
          },
          {
            "name": "soldNo",
            "type": "u64"
          },
          {
            "docs": [
              "Moved from the treasury at creation: the LMSR's worst-case loss, micro-USDC."
            ],
            "name": "subsidy",
            "type": "u64"
          },
          {
            "docs": [
              "Sum of trade amounts (net of fees), micro-USDC."
            ],
            "name": "volume",
            "type": "u64"
          },
          {
            "name": "tradeCount",
            "type": "u64"
          },
          {
            "docs": [
              "Fees collected and held for a possible void, micro-USDC; sent to the treasury on",
              "resolution."
            ],
            "name": "feesHeld",
            "type": "u64"
          },
          {
            "docs": [
              "Positions not yet settled."
            ],
            "name": "openPositions",
            "type": "u32"
          },
          {
            "docs": [
              "What a void would owe, micro-USDC: the sum over open positions of their refund claim (`Position::refund_claim`), kept with every trade."
            ],
            "name": "refundClaims",
            "type": "u64"
          },
          {
            "docs": [
              "Set when voided, micro-USDC: what the refunds share, `min(market vault, refund_claims)` at that moment (see `settle_position`). 0 otherwise."
            ],
            "name": "refundPool",
            "type": "u64"
          },
          {
            "docs": [
              "Set when voided: `refund_claims` at that moment, the denominator of every refund."
            ],
            "name": "refundClaimsAtVoid",
            "type": "u64"
          },
          {
            "name": "status",
            "type": {
              "defined": {
                "name": "marketStatus"
              }
            }
          },
          {
            "name": "outcome",
            "type": {
              "defined": {
                "name": "outcome"
              }
            }
          },
          {
            "docs": [
              "The settled funding rate, in units of 1e-12 (0.0001 = 100_000_000)."
            ],
            "name": "actualRate",
            "type": "i64"
          },
          {
            "docs": [
              "When it was resolved or voided (Unix s), 0 before."
            ],
            "name": "finalizedAt",
            "type": "i64"
          },
          {
            "name": "bump",
            "type": "u8"
          },
          {
            "name": "vaultBump",
            "type": "u8"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "marketClosed",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "docs": [
              "Micro-USDC."
            ],
            "name": "returnedToTreasury",
            "type": "u64"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "marketCreated",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "docs": [
              "The service's UUID."
            ],
            "name": "marketId",
            "type": {
              "array": [
                "u8",
                16
              ]
            }
          },
          {
            "docs": [
              "Series slug, zero-padded UTF-8."
            ],
            "name": "series",
            "type": {
              "array": [
                "u8",
                32
              ]
            }
          },
          {
            "docs": [
              "Unix seconds (also `close_ts`, `settlement_ts`, `ts`)."
            ],
            "name": "openTs",
            "type": "i64"
          },
          {
            "name": "closeTs",
            "type": "i64"
          },
          {
            "name": "settlementTs",
            "type": "i64"
          },
          {
            "docs": [
              "LMSR liquidity, micro-USDC."
            ],
            "name": "b",
            "type": "u64"
          },
          {
            "docs": [
              "Opening quantities, micro-shares."
            ],
            "name": "qYes",
            "type": "u64"
          },
          {
            "name": "qNo",
            "type": "u64"
          },
          {
            "docs": [
              "Moved from the treasury, micro-USDC."
            ],
            "name": "subsidy",
            "type": "u64"
          },
          {
            "docs": [
              "Opening prices in millionths; they sum to 1,000,000."
            ],
            "name": "yesPrice",
            "type": "u64"
          },
          {
            "name": "noPrice",
            "type": "u64"
          },
          {
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "marketFinalized",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "name": "voided",
            "type": "bool"
          },
          {
            "docs": [
              "`Undecided` on a void."
            ],
            "name": "outcome",
            "type": {
              "defined": {
                "name": "outcome"
              }
            }
          },
          {
            "docs": [
              "The settled funding rate in units of 1e-12 (0 on a void)."
            ],
            "name": "actualRate",
            "type": "i64"
          },
          {
            "docs": [
              "Fees moved to the treasury (0 on void: they are refunded)."
            ],
            "name": "feesToTreasury",
            "type": "u64"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "marketStatus",
      "type": {
        "kind": "enum",
        "variants": [
          {
            "name": "open"
          },
          {
            "name": "resolved"
          },
          {
            "name": "voided"
          }
        ]
      }
    },
    {
      "name": "outcome",
      "type": {
        "kind": "enum",
        "variants": [
          {
            "name": "undecided"
          },
          {
            "name": "yes"
          },
          {
            "name": "no"
          }
        ]
      }
    },
    {
      "docs": [
        "A wallet's holding in one market, PDA `[\"position\", market, wallet]`. Closed when settled."
      ],
      "name": "position",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "docs": [
              "Micro-shares."
            ],
            "name": "yesShares",
            "type": "u64"
          },
          {
            "name": "noShares",
            "type": "u64"
          },
          {
            "docs": [
              "Everything paid into the market on buys (amount + fee), micro-USDC."
            ],
            "name": "paidIn",
            "type": "u64"
          },
          {
            "docs": [
              "Everything received from the market on sells (after fee), micro-USDC."
            ],
            "name": "paidOut",
            "type": "u64"
          },
          {
            "docs": [
              "Fees paid, micro-USDC (already inside `paid_in` / deducted from `paid_out`)."
            ],
            "name": "feesPaid",
            "type": "u64"
          },
          {
            "docs": [
              "Who paid the account's rent; it gets it back when the position closes."
            ],
            "name": "rentPayer",
            "type": "pubkey"
          },
          {
            "name": "bump",
            "type": "u8"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "positionSettled",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "docs": [
              "The position settled, micro-shares."
            ],
            "name": "yesShares",
            "type": "u64"
          },
          {
            "name": "noShares",
            "type": "u64"
          },
          {
            "docs": [
              "Paid into the owner's vault, micro-USDC."
            ],
            "name": "payout",
            "type": "u64"
          },
          {
            "docs": [
              "The owner's vault after the payout, micro-USDC."
            ],
            "name": "userVaultBalance",
            "type": "u64"
          },
          {
            "name": "voided",
            "type": "bool"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "side",
      "type": {
        "kind": "enum",
        "variants": [
          {
            "name": "yes"
          },
          {
            "name": "no"
          }
        ]
      }
    },
    {
      "name": "tradeExecuted",
      "type": {
        "fields": [
          {
            "name": "market",
            "type": "pubkey"
          },
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "name": "side",
            "type": {
              "defined": {
                "name": "side"
              }
            }
          },
          {
            "docs": [
              "true for a buy, false for a sell."
            ],
            "name": "isBuy",
            "type": "bool"
          },
          {
            "docs": [
              "Micro-shares bought or sold."
            ],
            "name": "shares",
            "type": "u64"
          },
          {
            "docs": [
              "Buy: USDC spent on shares (fee excluded). Sell: USDC the shares fetched (fee included)."
            ],
            "name": "amount",
            "type": "u64"
          },
          {
            "docs": [
              "Micro-USDC, held in the market until resolution."
            ],
            "name": "fee",
            "type": "u64"
          },
          {
            "docs": [
              "Quantities after the trade, micro-shares."
            ],
            "name": "qYes",
            "type": "u64"
          },
          {
            "name": "qNo",
            "type": "u64"
          },
          {
            "docs": [
              "Prices after the trade in millionths; they sum to 1,000,000."
            ],
            "name": "yesPrice",
            "type": "u64"
          },
          {
            "name": "noPrice",
            "type": "u64"
          },
          {
            "docs": [
              "The market's cumulative volume, micro-USDC, and trade count, after the trade."
            ],
            "name": "volume",
            "type": "u64"
          },
          {
            "name": "tradeCount",
            "type": "u64"
          },
          {
            "docs": [
              "The trader's position after the trade, micro-shares."
            ],
            "name": "positionYes",
            "type": "u64"
          },
          {
            "name": "positionNo",
            "type": "u64"
          },
          {
            "docs": [
              "The market vault after the trade, micro-USDC."
            ],
            "name": "vaultBalance",
            "type": "u64"
          },
          {
            "docs": [
              "The trader's vault (trading balance) after the trade, micro-USDC."
            ],
            "name": "userVaultBalance",
            "type": "u64"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "docs": [
        "A trader, PDA `[\"user\", wallet]`. Owns two USDC token accounts: `deposit` (the personal",
        "deposit address, PDA `[\"deposit\", wallet]`) and `vault` (the trading balance, PDA",
        "`[\"vault\", wallet]`), both with this account as their token authority."
      ],
      "name": "userAccount",
      "type": {
        "fields": [
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "name": "deposit",
            "type": "pubkey"
          },
          {
            "name": "vault",
            "type": "pubkey"
          },
          {
            "name": "bump",
            "type": "u8"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "userCreated",
      "type": {
        "fields": [
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "docs": [
              "The `UserAccount` PDA."
            ],
            "name": "user",
            "type": "pubkey"
          },
          {
            "docs": [
              "The personal deposit address (USDC token account)."
            ],
            "name": "deposit",
            "type": "pubkey"
          },
          {
            "docs": [
              "The trading balance (USDC token account)."
            ],
            "name": "vault",
            "type": "pubkey"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    },
    {
      "name": "withdrawn",
      "type": {
        "fields": [
          {
            "name": "wallet",
            "type": "pubkey"
          },
          {
            "docs": [
              "The USDC token account paid."
            ],
            "name": "destination",
            "type": "pubkey"
          },
          {
            "docs": [
              "Micro-USDC."
            ],
            "name": "amount",
            "type": "u64"
          },
          {
            "docs": [
              "The vault after the withdrawal, micro-USDC."
            ],
            "name": "vaultBalance",
            "type": "u64"
          },
          {
            "docs": [
              "Unix seconds."
            ],
            "name": "ts",
            "type": "i64"
          }
        ],
        "kind": "struct"
      }
    }
  ]
};
