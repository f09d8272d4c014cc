from app.serve import main

main()
