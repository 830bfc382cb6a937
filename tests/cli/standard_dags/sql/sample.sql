CREATE TABLE Orders (
    order_id INT PRIMARY KEY,
    name TEXT
)
